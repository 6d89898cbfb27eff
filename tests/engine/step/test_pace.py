"""Calls sized by time: grow from one step, settle near the target, shrink when slow."""

import pytest

from tf_mgpu.engine.step import pace


def run_calls(sizer: pace.Pace, seconds_per_step: float, calls: int) -> list[int]:
    """The counts of `calls` calls of a model whose step takes `seconds_per_step`."""
    counts = []
    for _ in range(calls):
        counts.append(sizer.count)
        sizer.record(sizer.count, sizer.count * seconds_per_step)
        sizer.follow(sizer.proposal())
    return counts


def test_calls_grow_from_one_step_to_about_the_target_and_stay():
    counts = run_calls(pace.Pace(target=1.0), seconds_per_step=0.001, calls=8)
    assert counts[:4] == [1, 8, 64, 512]  # at most GROWTH times per call
    assert counts[4:] == [1000] * 4  # settled: one second's worth, unchanged


@pytest.mark.parametrize("step", [0.3, 1.5, 60.0])
def test_a_slow_step_makes_calls_of_one_step_or_about_the_target(step):
    counts = run_calls(pace.Pace(target=1.0), seconds_per_step=step, calls=5)
    assert counts[0] == 1
    assert all(count * step <= 2 * max(1.0, step) for count in counts), counts


def test_a_model_that_slows_down_gets_shorter_calls():
    sizer = pace.Pace(target=1.0)
    run_calls(sizer, 0.001, 6)
    assert sizer.count == 1000
    sizer.record(1000, 10.0)  # each step now 10 ms: the call took 10 s
    sizer.follow(sizer.proposal())
    assert sizer.count == 100


def test_an_explicit_count_caps_the_calls():
    assert run_calls(pace.Pace(target=1.0, cap=50), 0.001, 4) == [1, 8, 50, 50]


def test_a_short_remainder_leaves_the_count_alone():
    sizer = pace.Pace(target=1.0)
    run_calls(sizer, 0.001, 6)
    sizer.record(3, 0.003)  # the epoch's last 3 steps
    assert sizer.proposal() == 1000


def test_the_agreed_count_is_the_one_followed():
    sizer = pace.Pace(target=1.0)
    sizer.record(1, 0.001)
    assert sizer.proposal() == 8
    sizer.follow(5)  # the chief proposed 5
    assert sizer.count == 5
