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
- save: the chief's "--checkpoint_secs have passed since the last save";
- bad: the call's first step whose loss was not finite on any worker. A worker
  may see it alone: its own rows gave the non-finite loss, and the others see
  it a step later through the all-reduced gradient (or, when it ended the
  call, in their next call), or never (a LossScaleOptimizer skips the step).
  Every worker then stops after the same call, with the same step in its line.
  Only when some worker saw one does a second all-reduce, of one value per step
  of the call, find the first.

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
    # The call just run: its steps, and its first step (from 1) whose loss was not finite.
    call: int = 0
    bad: int = 0


class DecisionAgreement:
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
        views = [float(mine.stop), chief * mine.steps, chief * mine.eval_steps, chief * mine.save]
        summed = self._total([*views, float(mine.bad > 0)])
        stop, steps, eval_steps, save, bad = (float(v) / self._local for v in summed)
        first = self._first_bad(mine) if bad > 0 else 0
        self.latest = Decision(
            stop > 0, round(steps), round(eval_steps), save > 0, call=mine.call, bad=first
        )
        self.stopped_elsewhere = self.latest.stop and not mine.stop
        return self.latest

    def _first_bad(self, mine: Decision) -> int:
        """The first bad step of the call over every worker (every worker ran the same
        steps): each marks the steps from its own first bad one on, and the sum's first
        marked step is the first of all."""
        marks = [float(mine.bad > 0 and step >= mine.bad) for step in range(1, mine.call + 1)]
        summed = self._total(marks)
        return next(step for step, v in enumerate(summed, start=1) if v > 0)


def for_strategy(strategy, view: Callable[[], Decision], *, multi_worker: bool, is_chief: bool):
    """The agreement of `strategy`'s workers: an all-reduce under MultiWorkerMirroredStrategy."""
    if not multi_worker:
        return DecisionAgreement(view)
    from tf_mgpu.engine.distribute import strategies

    return DecisionAgreement(
        view,
        total=strategies.replica_sum(strategy),
        is_chief=is_chief,
        local_replicas=len(strategies.devices_of(strategy)),
    )
