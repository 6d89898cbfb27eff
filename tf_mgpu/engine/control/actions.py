"""The engine's actions between compiled calls: checkpoints, stopping on a signal.

Each runs on every worker (see `tf_mgpu.engine.control.controller` for the rule on
collectives): a save reads the metric sums, and what they act on (a stop, a
save by time) was agreed by every worker after the call
(`tf_mgpu.engine.distribute.agreement`).
"""

import time

from tf_mgpu.engine.control.controller import Action, Moment
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.distribute.agreement import DecisionAgreement
from tf_mgpu.engine.faults import stopping
from tf_mgpu.engine.faults.liveness import Liveness
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.errors import Diverged, Stopped


class Checkpointing(Action):
    """Saves every `every` steps (at block boundaries), when the workers agreed that
    `every_seconds` passed since the last save (0: never by time), and after every epoch's
    evaluation.

    Refuses to save non-finite weights: a diverged run keeps its last good checkpoint.
    """

    def __init__(
        self,
        trainer: Trainer,
        checkpoints: checkpoint.Checkpoints,
        every: int,
        every_seconds: float = 0.0,
        clock=time.monotonic,
        *,
        liveness: Liveness | None = None,
        strategy=None,
    ):
        self._trainer, self.checkpoints, self._every = trainer, checkpoints, every
        self._liveness, self._strategy = liveness, strategy
        self._every_seconds, self._clock = every_seconds, clock
        self._last_saved = trainer.step()  # where the cadence counts from
        self._last_saved_at = clock()
        self._saved_step = None  # the step this process last saved
        self.seconds = 0.0  # spent saving, in this process
        self.agreement: DecisionAgreement | None = None  # set once built: it asks `due_by_time`

    def due_by_time(self) -> bool:
        """This process's clock says a save is due (the chief's view is the one agreed)."""
        return bool(self._every_seconds) and (
            self._clock() - self._last_saved_at >= self._every_seconds
        )

    def after_call(self, moment: Moment) -> None:
        by_time = self.agreement is not None and self.agreement.latest.save
        if not moment.last and (moment.step - self._last_saved >= self._every or by_time):
            self.save()

    def after_epoch(self, record: dict) -> None:
        self.save()

    def save(self, again: bool = False) -> None:
        """Saves the current step, once: a stop right after a periodic save saves nothing new
        (`again`: the weights changed since, at the same step).

        Under its own deadline (`Liveness.saving`); every worker leaves it once the chief's
        write has ended, so a slow write is no frozen peer to a worker that wrote faster.
        """
        trainer = self._trainer
        if trainer.step() == self._saved_step and not again:
            return
        started = time.perf_counter()
        if not trainer.weights_finite():
            epoch, _ = trainer.position()
            raise Diverged(
                f"the weights are not finite after step {trainer.step():,} (epoch {epoch + 1}); "
                f"lower --learning_rate"
            )
        if self._liveness is not None:
            self._liveness.saving(self.checkpoints.state_bytes)
        self.checkpoints.save(trainer.step())
        if self._strategy is not None:
            collectives.barrier(self._strategy)
        self._last_saved = self._saved_step = trainer.step()
        self._last_saved_at = self._clock()
        took = time.perf_counter() - started
        self.seconds += took
        if self._liveness is not None:
            self._liveness.saved(took)


class StopOnSignal(Action):
    """After SIGTERM/SIGINT on any worker: every worker saves the same step and stops.

    Put it after `Checkpointing` in the list: mid-epoch it saves (once: a
    periodic save of the same step stands), and at an epoch's end the save
    of `Checkpointing` has happened. While evaluating, it saves the epoch's
    steps (the epoch not yet counted done), and the resumed run evaluates it.
    The last epoch simply finishes.
    """

    def __init__(
        self,
        stop: stopping.Stop,
        saving: Checkpointing,
        strategy,
        epochs: int,
        agreement: DecisionAgreement,
    ):
        self._stop, self._saving, self._strategy, self._epochs = stop, saving, strategy, epochs
        self._agreement = agreement

    def _agreed(self) -> bool:
        agreed = self._agreement.latest.stop
        if agreed and self._agreement.stopped_elsewhere:
            self._stop.requested = self._stop.requested or "a signal to another worker"
        return agreed

    def after_call(self, moment: Moment) -> None:
        if not moment.last:  # the epoch's end checks after evaluating and saving
            self._save_if_agreed()

    def after_evaluation_call(self) -> None:
        self._save_if_agreed()

    def _save_if_agreed(self) -> None:
        if self._agreed():
            self._saving.save()
            self._halt()

    def after_epoch(self, record: dict) -> None:
        if record["epoch"] < self._epochs and self._agreed():
            self._halt()

    def _halt(self) -> None:
        collectives.finish_together(self._strategy)
        raise Stopped(
            f"{self._stop.requested}: saved {self._saving.checkpoints.latest}; rerun the same "
            f"command to resume from it"
        )
