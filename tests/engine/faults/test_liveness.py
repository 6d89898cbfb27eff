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
    ],
)
def test_the_supervisor_deadline_after_each_word(event, phase, limit):
    assert supervisor._deadline(event, 300.0, 60.0) == (phase, limit)
