"""What a trainer tells its supervisor, and how long the supervisor may then wait for more.

The supervisor (`tf_mgpu.cluster.supervisor`) ends a trainer that makes no
progress for too long: a frozen peer or a dead network leaves every
collective waiting. How long is too long depends on the model: a call of a
real model on a GPU takes seconds to minutes, and its first call waits for
every peer to finish compiling and pays one-time costs (kernels chosen, memory
allocated). So before each call the trainer says how long it may take, from
what it measured:

- `compiling`: the calls are traced and compiled now. That is local work (no
  collective runs), so no deadline holds, however long it takes.
- `warming` before what has not been measured yet (the first training call,
  the first evaluation call, the first epoch's end): the supervisor waits up to
  --startup_timeout, as for the rest of the start.
- `alive G` before every other call: the supervisor then waits at most
  `--peer_timeout + G` seconds for the next word, where G is twice the longest of
  the call's expected length (its steps x the seconds per step last measured)
  and the longest gap between two words seen so far.

A frozen or lost peer therefore ends the run within
`--peer_timeout + 2 x max(the expected call, the longest gap so far)` seconds
(plus the supervisor's 0.1 s poll) once the run is measured, within
--startup_timeout before, and never ends a healthy one whose calls keep their
length. The gap after the compile holds the peers' compile skew and the first
call's one-time costs, so it does not count as a gap.
"""

import time

from tf_mgpu.cluster import supervisor


class Liveness:
    """The words a trainer sends, with the grace each one grants (seconds, measured)."""

    def __init__(self, say=supervisor.notify, clock=time.monotonic):
        self._say, self._clock = say, clock
        self._last: float | None = None  # when the last word was said
        self.longest_gap = 0.0
        self._skip_gap = False  # gaps up to the first measured call hold one-time costs

    def compiling(self) -> None:
        self._say("compiling")
        self._last = None

    def compiled(self) -> None:
        self._skip_gap = True
        self.alive(None)

    def grace(self, expected: float) -> float:
        """The seconds beyond --peer_timeout that a call expected to take `expected` may."""
        return 2 * max(expected, self.longest_gap)

    def alive(self, expected: float | None) -> None:
        """Progress: what follows should take about `expected` seconds; None: not
        measured yet (--startup_timeout holds)."""
        now = self._clock()
        if self._last is not None and not self._skip_gap:
            self.longest_gap = max(self.longest_gap, now - self._last)
        if expected is not None:  # the first call was measured: gaps count from now on
            self._skip_gap = False
        self._last = now
        self._say("warming" if expected is None else f"alive {self.grace(expected):.3f}")
