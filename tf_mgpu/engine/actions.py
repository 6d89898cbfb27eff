"""The engine's actions between compiled calls: heartbeats, checkpoints, stopping on a signal.

Each runs on every worker (see `tf_mgpu.engine.controller` for the rule on
collectives): a save reads the metric sums, and the stop agreement is an
all-reduce, both at points every worker shares.
"""

import time

from tf_mgpu.cluster import supervisor
from tf_mgpu.engine import checkpoint, collectives, stopping
from tf_mgpu.engine.controller import Action, Moment
from tf_mgpu.engine.trainer import Trainer
from tf_mgpu.errors import Diverged, Stopped


class Heartbeat(Action):
    """Tells the supervisor (multi-worker) that training progresses, after every call."""

    def after_call(self, moment: Moment) -> None:
        supervisor.notify("alive")


class Checkpointing(Action):
    """Saves every `every` steps (at call boundaries) and after every epoch's evaluation.

    Refuses to save non-finite weights: a diverged run keeps its last good checkpoint.
    """

    def __init__(self, trainer: Trainer, checkpoints: checkpoint.Checkpoints, every: int):
        self._trainer, self.checkpoints, self._every = trainer, checkpoints, every
        self._last_saved = trainer.step()  # where the cadence counts from
        self._saved_step = None  # the step this process last saved
        self.seconds = 0.0  # spent saving, in this process

    def after_call(self, moment: Moment) -> None:
        if not moment.last and moment.step - self._last_saved >= self._every:
            self.save()

    def after_epoch(self, record: dict) -> None:
        self.save()

    def save(self) -> None:
        """Saves the current step, once: a stop right after a periodic save saves nothing new."""
        trainer = self._trainer
        if trainer.step() == self._saved_step:
            return
        started = time.perf_counter()
        if not trainer.weights_finite():
            epoch, _ = trainer.position()
            raise Diverged(
                f"the weights are not finite after step {trainer.step():,} (epoch {epoch + 1}); "
                f"lower --learning_rate"
            )
        self.checkpoints.save(trainer.step())
        self._last_saved = self._saved_step = trainer.step()
        self.seconds += time.perf_counter() - started
        supervisor.notify("alive")


class StopOnSignal(Action):
    """After SIGTERM/SIGINT on any worker: every worker saves the same step and stops.

    Put it after `Checkpointing` in the list: mid-epoch it saves (once: a
    periodic save of the same step stands), and at an epoch's end the save
    of `Checkpointing` has happened. The last epoch simply finishes.
    """

    def __init__(self, stop: stopping.Stop, saving: Checkpointing, strategy, epochs: int):
        self._stop, self._saving, self._strategy, self._epochs = stop, saving, strategy, epochs

    def after_call(self, moment: Moment) -> None:
        if moment.last:  # the epoch's end checks after evaluating and saving
            return
        if self._stop.agreed():
            self._saving.save()
            self._halt()

    def after_epoch(self, record: dict) -> None:
        if record["epoch"] < self._epochs and self._stop.agreed():
            self._halt()

    def _halt(self) -> None:
        collectives.finish_together(self._strategy)
        raise Stopped(
            f"{self._stop.requested}: saved {self._saving.checkpoints.latest}; rerun the same "
            f"command to resume from it"
        )
