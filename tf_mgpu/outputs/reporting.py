"""The outputs' actions between compiled calls: the training curve, the bar, the epoch's record.

No collective is called here except by reading `Moment.totals` (or the
epoch's starting sums) at points every worker shares; see
`tf_mgpu.engine.control.controller`. Writes happen on the chief only: elsewhere the
writers are given no model dir and write nothing.
"""

from collections.abc import Callable

from tf_mgpu.engine.control.controller import Action, Moment
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.outputs import progress, report, tensorboard


class TrainingCurve(Action):
    """TensorBoard's training loss, speed and rate every `every` steps and at each epoch's end.

    Reading the sums costs about half a millisecond and is collective under
    MultiWorkerMirroredStrategy, so it happens only at the curve's points.
    """

    def __init__(self, trainer: Trainer, logs: tensorboard.Summaries, every: int):
        self._trainer, self._logs, self._every = trainer, logs, every
        self._interval = tensorboard.Interval()
        self._last_logged = trainer.step()
        self._seconds_seen = trainer.call_seconds
        self.epoch_start = (0.0, 0.0)  # (summed loss, examples) the epoch started from

    def start_epoch(self, trainer: Trainer, epoch: int) -> None:
        _, done = trainer.position()
        # A resumed epoch continues from its restored sums.
        self.epoch_start = trainer.state.train_sums.totals() if done else (0.0, 0.0)
        self._interval.start_epoch(*self.epoch_start)

    def after_call(self, moment: Moment) -> None:
        if not (moment.step - self._last_logged >= self._every or moment.last):
            return
        trainer = self._trainer
        loss, examples = moment.totals
        self._interval.update(loss, examples, trainer.call_seconds - self._seconds_seen)
        self._seconds_seen = trainer.call_seconds
        self._last_logged = moment.step
        mean, speed = self._interval.take()
        self._logs.training(moment.step, mean, speed, trainer.rate_at(moment.step - 1))


class ProgressBar(Action):
    """The chief's bar on a terminal: after every call in one process; at the curve's
    points (whose sums are already read) with several workers."""

    def __init__(self, bar: progress.Progress, curve: TrainingCurve, epochs: int, single: bool):
        self._bar, self._curve, self._epochs, self._single = bar, curve, epochs, single
        self._began = (0.0, 0.0)  # (examples, call seconds) when this process began the epoch

    def start_epoch(self, trainer: Trainer, epoch: int) -> None:
        self._began = (self._curve.epoch_start[1], trainer.call_seconds)
        _, done = trainer.position()
        self._bar.start_epoch(epoch, self._epochs, trainer.train_steps, done)

    def after_call(self, moment: Moment) -> None:
        if not self._bar.live or not (self._single or "totals" in vars(moment)):
            return
        trainer = moment.trainer
        loss, examples = moment.totals
        seconds = max(trainer.call_seconds - self._began[1], 1e-9)
        done = moment.step - (moment.epoch - 1) * trainer.train_steps
        self._bar.update(done, loss / max(examples, 1.0), (examples - self._began[0]) / seconds)

    def end_epoch_training(self, epoch: int) -> None:
        self._bar.end_epoch()


class EpochLog(Action):
    """After each epoch: its record in the history, metrics.jsonl, TensorBoard and one line."""

    def __init__(
        self,
        trainer: Trainer,
        history: list[dict],
        outputs: report.Outputs,
        logs: tensorboard.Summaries,
        epochs: int,
        chief_print: Callable,
    ):
        self._trainer, self._history, self._epochs = trainer, history, epochs
        self._outputs, self._logs, self._print = outputs, logs, chief_print

    def after_epoch(self, record: dict) -> None:
        self._history.append(record)
        self._outputs.epoch(record)
        self._logs.epoch(self._trainer.step(), record)
        self._print(report.epoch_line(record, self._epochs), flush=True)
