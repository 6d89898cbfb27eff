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
- `compiling` before the first training and evaluation calls too where XLA compiles
  each replica's step (on GPUs): that compile runs inside the first call, not before.
- `warming` before what has not been measured yet (the first training call,
  the first evaluation call, the first epoch's end): the supervisor waits up to
  --startup_timeout, as for the rest of the start.
- `alive G` before every other call: the supervisor then waits at most
  `--peer_timeout + G` seconds for the next word, where G is twice the longest of
  the call's expected length (its steps x the seconds per step last measured)
  and the longest gap between two words seen so far.

Between calls, the work of every worker has its own words, so that it is bounded by
what it measured, not by the call before it:

- `saving G` before a checkpoint save (every worker writes, then waits for the
  chief's write to end): G is twice the longest save so far, plus
  `2 x the state's bytes / 100 MB/s`; before the first save, `saving` alone, and
  --startup_timeout holds. A save slower than --peer_timeout is not a frozen peer.
- `ending G` before the end of the run's collectives (the summary's sums, the
  workers' weights compared by sha256): G is twice the longest gap so far plus
  the weights' bytes / 100 MB/s (hashing runs at several hundred MB/s).
- The evaluation of the final weights runs in calls, each `alive G` as above.

A frozen or lost peer therefore ends the run within
`--peer_timeout + 2 x max(the expected call, the longest gap so far)` seconds
(plus the supervisor's 0.1 s poll) once the run is measured, within
--startup_timeout before, and never ends a healthy one whose calls keep their
length. The gap after the compile holds the peers' compile skew and the first
call's one-time costs, so it does not count as a gap.
"""

import time

from tf_mgpu.cluster import supervisor

# A floor on how fast state is written or hashed; a bound, not a forecast (local disks
# write GB/s, sha256 hashes at several hundred MB/s).
_BYTES_PER_SECOND = 100e6


class Liveness:
    """The words a trainer sends, with the grace each one grants (seconds, measured)."""

    def __init__(self, say=supervisor.notify, clock=time.monotonic):
        self._say, self._clock = say, clock
        self._last: float | None = None  # when the last word was said
        self.longest_gap = 0.0
        self.longest_save: float | None = None  # seconds, once a save was measured
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

    def before_call(self, expected: float | None, compiles: bool) -> None:
        """Before a call expected to take `expected` seconds (None: not measured yet), whose
        first run compiles its step (`compiles`: XLA per replica) or not."""
        if expected is None and compiles:
            self.compiling()
        else:
            self.alive(expected)

    def saving(self, state_bytes: int) -> None:
        """Before a checkpoint save of `state_bytes` (see the module's docstring)."""
        self._gap()
        if self.longest_save is None:
            self._say("saving")
        else:
            bound = 2 * self.longest_save + 2 * state_bytes / _BYTES_PER_SECOND
            self._say(f"saving {bound:.3f}")

    def saved(self, seconds: float) -> None:
        """After a save that took `seconds` (its end, every worker's): gaps count from here."""
        self.longest_save = max(self.longest_save or 0.0, seconds)
        self._last = self._clock()

    def ending(self, weight_bytes: int) -> None:
        """Before the end of the run's collectives (see the module's docstring)."""
        self._gap()
        bound = 2 * self.longest_gap + weight_bytes / _BYTES_PER_SECOND
        self._say(f"ending {bound:.3f}")

    def _gap(self) -> None:
        now = self._clock()
        if self._last is not None and not self._skip_gap:
            self.longest_gap = max(self.longest_gap, now - self._last)
        self._last = now

    def alive(self, expected: float | None) -> None:
        """Progress: what follows should take about `expected` seconds; None: not
        measured yet (--startup_timeout holds)."""
        self._gap()
        if expected is not None:  # the first call was measured: gaps count from now on
            self._skip_gap = False
        self._say("warming" if expected is None else f"alive {self.grace(expected):.3f}")
