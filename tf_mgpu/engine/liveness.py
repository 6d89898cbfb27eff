"""What a trainer tells its supervisor, and how long the supervisor may then wait for more.

The supervisor (`tf_mgpu.cluster.supervisor`) ends a trainer that makes no
progress for too long: a frozen peer or a dead network leaves every
collective waiting. How long is too long depends on the model: a call of a
real model on a GPU takes seconds to minutes, and its first call waits for
every peer to finish compiling. So before each call the trainer says how long
it may take, from what it measured:

- `compiling`: the calls are traced and compiled now. That is local work (no
  collective runs), so no deadline holds, however long it takes; its seconds
  are measured.
- `alive G` before each call: the supervisor then waits at most
  `--peer_timeout + G` seconds for the next word, where G is twice the longest of:
  the call's expected length (its steps x the seconds per step last measured),
  the longest gap between two words seen so far, and, before the first call
  ends, the compile time (the first call waits for every peer's compile, and a
  peer may compile up to twice as long).

A frozen or lost peer therefore ends the run within
`--peer_timeout + 2 x max(the expected call, the longest gap so far)` seconds
(plus the supervisor's 0.1 s poll), and never ends a healthy one whose calls
keep their length. The first gap after the compile holds the peers' compile
skew, so it does not count as a gap.
"""

import time

from tf_mgpu.cluster import supervisor


class Liveness:
    """The words a trainer sends, with the grace each one grants (seconds, measured)."""

    def __init__(self, say=supervisor.notify, clock=time.monotonic):
        self._say, self._clock = say, clock
        self._last: float | None = None  # when the last word was said
        self.longest_gap = 0.0
        self.compile_seconds = 0.0
        self._after_compile = False  # the next gap holds the peers' compile skew

    def compiling(self) -> None:
        self._say("compiling")
        self._last = None

    def compiled(self, seconds: float) -> None:
        self.compile_seconds, self._after_compile = seconds, True
        self.alive()

    def grace(self, expected: float | None = None) -> float:
        """The seconds beyond --peer_timeout that the next wait may take."""
        longest = max(expected or 0.0, self.longest_gap)
        if self._after_compile:
            longest = max(longest, self.compile_seconds)
        return 2 * longest

    def alive(self, expected: float | None = None) -> None:
        """Progress: what follows should take about `expected` seconds (None: unmeasured)."""
        now = self._clock()
        if self._last is not None:
            gap = now - self._last
            if self._after_compile and expected is not None:
                self._after_compile = False  # the first call is done: its gap is skew
            else:
                self.longest_gap = max(self.longest_gap, gap)
        self._last = now
        self._say(f"alive {self.grace(expected):.3f}")
