"""The grace each word grants: the call's expected length, the longest gap, the compile."""

import pytest

from tf_mgpu.cluster import supervisor
from tf_mgpu.engine.faults import liveness


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_what_is_not_measured_yet_warms_then_calls_get_twice_their_measure():
    said, clock = [], Clock()
    alive = liveness.Liveness(said.append, clock)
    alive.compiling()
    clock.now = 300.0  # a compile of five minutes: no deadline meanwhile
    alive.compiled()
    alive.alive(None)  # before the first call: nothing measured yet
    assert said == ["compiling", "warming", "warming"]
    clock.now = 400.0  # the first call waited 100 s for a peer's slower compile
    alive.alive(2.0)  # the second call should take 2 s
    assert said[-1] == "alive 4.000", "the compile skew is not a gap between calls"
    clock.now = 403.0
    alive.alive(2.0)
    assert said[-1] == "alive 6.000", "twice the longest gap (3 s)"


def test_grace_follows_the_expected_call_when_it_is_the_longest():
    said, clock = [], Clock()
    alive = liveness.Liveness(said.append, clock)
    alive.compiled()
    alive.alive(None)
    clock.now = 1.0
    alive.alive(0.5)
    clock.now = 1.5
    alive.alive(40.0)  # a slow step after a fast one
    assert said[-1] == "alive 80.000"


def test_a_first_call_that_compiles_each_replicas_step_has_no_deadline():
    said, clock = [], Clock()
    alive = liveness.Liveness(said.append, clock)
    alive.compiled()
    alive.before_call(None, compiles=False)
    alive.before_call(None, compiles=True)  # XLA per replica: the compile is in the call
    clock.now = 600.0  # ten minutes of compiling
    alive.before_call(2.0, compiles=True)
    assert said == ["warming", "warming", "compiling", "alive 4.000"]


def test_a_save_is_bounded_by_the_saves_measured_not_by_the_call_before_it():
    said, clock = [], Clock()
    alive = liveness.Liveness(said.append, clock)
    alive.compiled()
    alive.alive(None)
    clock.now = 1.0
    alive.alive(0.1)  # calls of 0.1 s: a save of 30 s would outlast their grace
    clock.now = 1.1
    alive.saving(200_000_000)
    assert said[-1] == "saving", "the first save is not measured: --startup_timeout"
    clock.now = 31.1
    alive.saved(30.0)
    clock.now = 31.2
    alive.alive(0.1)
    assert said[-1] == "alive 0.200", "a save is no gap between calls"
    alive.saving(200_000_000)
    assert said[-1] == "saving 64.000", "twice the longest save, and 2 s per 100 MB"
    alive.ending(100_000_000)
    assert said[-1] == "ending 1.200", "twice the longest gap (0.1 s), and 1 s per 100 MB"


@pytest.mark.parametrize(
    ("event", "phase", "limit"),
    [
        ("joining", "joining", 300.0),
        ("joined", "preparing", 300.0),
        ("compiling", "compiling", None),
        ("warming", "preparing", 300.0),
        ("finishing", "finishing", None),
        ("alive", "training", 60.0),
        ("alive 12.5", "training", 72.5),
        ("alive nonsense", "training", 60.0),
        ("saving", "first save", 300.0),
        ("saving 7", "saving", 67.0),
        ("ending 3.5", "ending the run", 63.5),
    ],
)
def test_the_supervisor_deadline_after_each_word(event, phase, limit):
    assert supervisor._deadline(event, 300.0, 60.0) == (phase, limit)
