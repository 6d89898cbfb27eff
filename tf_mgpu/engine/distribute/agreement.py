"""What every worker must decide alike after each call, agreed in one all-reduce.

Under MultiWorkerMirroredStrategy the workers' next calls hold collectives, so
they must run the same number of steps, stop after the same call and save the
same step. Each worker's own view differs: a signal may reach one worker only,
and each measures its own calls and its own clock. After every call each
worker adds its view to one small all-reduce (about a millisecond on loopback,
once per call of about a second):

- stop: any worker's "I was asked to stop" (`tf_mgpu.engine.faults.stopping`);
- the next training and evaluation call's steps: the chief's proposals
  (`tf_mgpu.engine.step.pace`), so one decides and all follow;
- save: the chief's "--checkpoint_secs have passed since the last save".

Every worker decides on the all-reduced values only: a signal that lands
during the all-reduce waits for the next call, or this worker would stop
alone while the others train on (and their next collective fails).
In one process the views are the decision, with no collective.
"""

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Decision:
    """A worker's view after a call, or, agreed, what every worker does next."""

    stop: bool
    steps: int
    eval_steps: int
    save: bool


class Agreement:
    """Turns each worker's view (a `Decision` of its own) into the one every worker acts on.

    `total(values)` sums a list of floats over every replica of every worker
    (`tf_mgpu.engine.distribute.strategies.replica_sum`), None in one process; each worker
    holds `local_replicas` of them, so its values count that many times.
    """

    def __init__(
        self,
        view: Callable[[], Decision],
        *,
        total: Callable | None = None,
        is_chief: bool = True,
        local_replicas: int = 1,
    ):
        self._view, self._total = view, total
        self._chief, self._local = float(is_chief), local_replicas
        self.latest = Decision(stop=False, steps=0, eval_steps=0, save=False)
        self.stopped_elsewhere = False  # the stop came from another worker's signal

    def agree(self) -> Decision:
        mine = self._view()
        if self._total is None:
            self.latest = mine
            return mine
        chief = self._chief
        summed = self._total(
            [float(mine.stop), chief * mine.steps, chief * mine.eval_steps, chief * mine.save]
        )
        stop, steps, eval_steps, save = (float(v) / self._local for v in summed)
        self.latest = Decision(stop > 0, round(steps), round(eval_steps), save > 0)
        self.stopped_elsewhere = self.latest.stop and not mine.stop
        return self.latest


def for_strategy(strategy, view: Callable[[], Decision], *, multi_worker: bool, is_chief: bool):
    """The agreement of `strategy`'s workers: an all-reduce under MultiWorkerMirroredStrategy."""
    if not multi_worker:
        return Agreement(view)
    from tf_mgpu.engine.distribute import strategies

    return Agreement(
        view,
        total=strategies.replica_sum(strategy),
        is_chief=is_chief,
        local_replicas=len(strategies.devices_of(strategy)),
    )
