"""How many steps one compiled call runs: sized by time, so any model's call lasts seconds.

A call is the unit of everything between calls: liveness (the supervisor hears
from a worker once per call), stops (a signal is acted on between calls), the
progress bar, batch callbacks and periodic checkpoints. A fixed count makes its
length the model's business: 500 MNIST steps take 0.1 s on a CPU, 500 steps of a
real model on a GPU take minutes. So calls are sized by time: the first runs one
step, each next one is sized from the last one's seconds per step to take about
`target` seconds (growing at most `GROWTH` times per call, so a first call that
was fast for a passing reason costs little); once sized by its measure, the
count changes only when a call leaves [target / 2, 2 x target]: it settles, and
a call's length stays within twice the target, or one step, whatever the step
time.

`--steps_per_loop=N` caps the count at N and sets the cadence of what happens
between calls (`tf_mgpu.engine.control.controller`): N-step blocks run as before,
each as one call where N steps fit in the target, else as several.

Under MultiWorkerMirroredStrategy every worker must run the same count (the
calls hold collectives): the chief's proposal is agreed after every call
(`tf_mgpu.engine.distribute.agreement`) and every worker then `follow`s it.
"""

import math

GROWTH = 8  # at most this many times the last call's steps
FIRST = 1  # steps of the first call: a step of minutes must not make a call of hours


class Pace:
    """The step count of the next call, and what was measured to choose it.

    `cap` is the most steps a call may run (--steps_per_loop=N), None for auto;
    `target` the seconds a call should take (--loop_seconds).
    """

    def __init__(self, target: float, cap: int | None = None, first: int = FIRST):
        self.target, self.cap = target, cap
        self.count = self._capped(first)  # agreed: what the next call runs
        self._proposal = self.count
        self._growing = True  # until a call is sized by its measure, not by GROWTH
        self.seconds_per_step: float | None = None  # of the latest measured call

    def _capped(self, count: int) -> int:
        return max(1, min(count, self.cap or count))

    def record(self, steps: int, seconds: float) -> None:
        """A call ran `steps` steps in `seconds`: the proposal for the next one follows."""
        if steps <= 0:
            return
        self.seconds_per_step = seconds / steps
        too_long = seconds > 2 * self.target
        # A short remainder (the epoch's last call) says nothing about the count.
        too_short = seconds < self.target / 2 and steps >= self.count
        if not (too_long or too_short or self._growing):
            return  # within the band, and settled: keep the count
        wanted = self.target / max(self.seconds_per_step, 1e-9)
        self._growing = wanted > steps * GROWTH and steps == self.count
        self._proposal = self._capped(max(1, math.floor(min(wanted, steps * GROWTH))))

    def proposal(self) -> int:
        """What this process would run next (the chief's is the one agreed)."""
        return self._proposal

    def follow(self, count: int) -> None:
        """The count every worker runs next, as agreed."""
        self.count = self._proposal = self._capped(int(count))

    def expected_seconds(self, steps: int | None = None) -> float | None:
        """How long a call of `steps` (default: the next count) should take, if measured."""
        if self.seconds_per_step is None:
            return None
        return self.seconds_per_step * (self.count if steps is None else steps)

    def describe(self) -> str:
        """For the time line: the count calls settled at, and what one takes."""
        took = self.expected_seconds()
        shown = f" (~{took:.2g} s)" if took is not None else ""
        return f"up to {self.count} steps per call{shown}"
