"""The outer loop: epochs of compiled calls, and an ordered list of actions between them.

As Orbit's Controller does with its `train_actions`, the loop itself only
trains and evaluates; everything that happens between compiled calls
(the training curve, the progress bar, stopping on a signal, checkpoints)
and after each epoch (the epoch's record, its save) is an action, run in
list order. The order is load-bearing: see `tf_mgpu.training`, which builds
the list.

Between any two calls, training or evaluating, the loop itself tells the
supervisor how long the next call may take (`tf_mgpu.engine.faults.liveness`) and
has the workers agree (`tf_mgpu.engine.distribute.agreement`) on the next call's steps,
a stop and a save by time. The actions run after each block of calls
(`--steps_per_loop=N`: N steps; auto: every call), and after any call where
the workers agreed to stop or to save, so that a stop or a timed save never
waits for a block of a slow model to end.

Multi-worker rule (stricter than Orbit's): every action runs on every
worker, and an action may call a collective only at a point every worker
shares (the same call, the same epoch), or the others wait for it forever.
Reading the training sums (`Moment.totals`) is such a collective.
"""

import dataclasses
import functools

from tf_mgpu.engine.distribute.agreement import DecisionAgreement
from tf_mgpu.engine.faults.liveness import Liveness
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.errors import Diverged


@dataclasses.dataclass
class Moment:
    """Where training is, after a compiled call: the optimizer step (read once per call),
    the epoch being trained (from 1), and whether that epoch's training is done."""

    trainer: Trainer
    step: int
    epoch: int
    last: bool

    @functools.cached_property
    def totals(self) -> tuple[float, float]:
        """(summed training loss, examples) of the epoch so far; collective, read once."""
        return self.trainer.state.train_sums.totals()


class Action:
    """Something done between compiled calls; every hook does nothing by default."""

    def start_training(self) -> None:
        """Once, before the first epoch this process trains (after any resume)."""

    def start_epoch(self, trainer: Trainer, epoch: int) -> None:
        """Before the epoch's first call (a resumed epoch starts mid-way)."""

    def after_call(self, moment: Moment) -> None:
        """After each block of calls (see the module's docstring)."""

    def after_evaluation_call(self) -> None:
        """After each call of an evaluation, once the workers agreed (a stop, say)."""

    def end_epoch_training(self, epoch: int) -> None:
        """After the epoch's last training call, before its evaluation, whether training
        ended well or raised."""

    def after_epoch(self, record: dict) -> None:
        """After the epoch's evaluation: `record` has its metrics."""

    def stop_requested(self) -> bool:
        """Whether training should end now (a Keras callback set `model.stop_training`),
        asked after every call and every epoch; every worker must answer alike."""
        return False

    def finish_training(self) -> None:
        """Once, after the last epoch trained, or after a requested stop."""


class Controller:
    """Trains the remaining epochs of `trainer`, running `actions` in order between calls."""

    def __init__(
        self,
        trainer: Trainer,
        epochs: int,
        actions: list[Action],
        agreement: DecisionAgreement,
        liveness: Liveness,
    ):
        self._trainer, self._epochs, self._actions = trainer, epochs, actions
        self._agreement, self._liveness = agreement, liveness
        self._epoch = self._first_epoch = 0

    def run(self) -> None:
        trainer = self._trainer
        for action in self._actions:
            action.start_training()
        self._first_epoch = trainer.position()[0] + 1
        for epoch in range(self._first_epoch, self._epochs + 1):
            self._epoch = epoch
            for action in self._actions:
                action.start_epoch(trainer, epoch)
            try:
                trained = trainer.train_epoch(self._after_call, self._before_call, close=False)
                record = {"epoch": epoch, **trained}
            finally:
                for action in self._actions:
                    action.end_epoch_training(epoch)
            # A stop while evaluating saves the epoch's steps, and the resumed run evaluates.
            record.update(trainer.evaluate(self._before_evaluation_call, self._after_evaluation))
            trainer.close_epoch()
            self._agreement.agree()  # a stop asked for while the epoch ended
            # The first epoch's end (saves, callbacks) is not measured yet; later ones are
            # within the longest gap, which the first one set.
            self._liveness.alive(None if epoch == self._first_epoch else 0.0)
            for action in self._actions:
                action.after_epoch(record)
            if self._stop_requested():
                break
        for action in self._actions:
            action.finish_training()

    def evaluate(self) -> dict:
        """The test (and validation) figures of the weights as they are now, in calls the
        workers agree on, as an epoch's evaluation runs (a signal saves and stops)."""
        return self._trainer.evaluate(self._before_evaluation_call, self._after_evaluation)

    def _stop_requested(self) -> bool:
        return any(action.stop_requested() for action in self._actions)

    def _before_call(self, steps: int) -> None:
        expected = self._trainer.expected_seconds(steps)
        self._liveness.before_call(expected, self._compiles_in_calls())

    def _before_evaluation_call(self, steps: int) -> None:
        expected = self._trainer.expected_seconds(steps, evaluating=True)
        self._liveness.before_call(expected, self._compiles_in_calls())

    def _compiles_in_calls(self) -> bool:
        """XLA compiles each replica's step at its first run, inside the first call."""
        return self._trainer.jit.scope == "replica"

    def _follow(self) -> None:
        trainer, decided = self._trainer, self._agreement.agree()
        if decided.bad:  # on some worker: every worker stops here, with the same line
            first = trainer.last_call[0]
            raise Diverged(trainer.diverged(trainer.position()[0], first + decided.bad - 1))
        trainer.pace.follow(decided.steps)
        if trainer.eval_pace is not None and decided.eval_steps:
            trainer.eval_pace.follow(decided.eval_steps)

    def _after_call(self, last: bool, block_end: bool) -> bool:
        """After each call: the agreement, then the actions if a block ends or the workers
        agreed to stop or save. Returns whether one asks to end the epoch here."""
        self._follow()
        decided = self._agreement.latest
        if not (block_end or last or decided.stop or decided.save):
            return False
        # The step is read once per block: a read costs ~0.2 ms, every step at one per call.
        moment = Moment(self._trainer, self._trainer.step(), self._epoch, last)
        for action in self._actions:
            action.after_call(moment)
        return self._stop_requested()

    def _after_evaluation(self) -> None:
        self._follow()
        for action in self._actions:
            action.after_evaluation_call()
