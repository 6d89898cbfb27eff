"""The benchmark's arithmetic: steady state, medians, ratios paired per round, verdicts."""

import dataclasses

import pytest

from tf_mgpu.tools.benchmarks import figures
from tf_mgpu.tools.benchmarks.figures import Measurement
from tf_mgpu.tools.benchmarks.variants import Comparison, Variant


def fake(variant: str, round_index: int, steady: float | None, **figures) -> Measurement:
    values = {
        "first_epoch_seconds": 2.0,
        "wall_seconds": 10.0,
        "test_accuracy": 0.9,
        "peak_memory_mib": 500.0,
        **figures,
    }
    return Measurement(variant, round_index, steady, epoch_seconds=[1.0], **values)


def test_steady_state_counts_every_epoch_after_the_first():
    m = figures.measurement("x", 0, [5.0, 1.0, 3.0], [100, 100, 100], 0.9, 300.0, 12.0)
    assert m.steady_examples_per_second == pytest.approx(50.0)
    assert m.first_epoch_seconds == 5.0
    one = figures.measurement("x", 0, [5.0], [100], 0.9, 300.0, 12.0)
    assert one.steady_examples_per_second is None


def test_ratios_pair_runs_of_the_same_round():
    # The machine slows down in round 1. Paired per round, the ratios are
    # 2, 2 and 2.5, median 2; the ratio of the medians would say 150 / 60 = 2.5.
    steady = {"seed_torch": (100.0, 20.0, 60.0), "fast": (200.0, 40.0, 150.0)}
    measurements = [
        fake(name, round_index, value)
        for name, values in steady.items()
        for round_index, value in enumerate(values)
    ]
    figure = "steady_examples_per_second"
    assert figures.paired(measurements, "fast", "seed_torch", figure) == 2.0
    assert figures.median(measurements, "fast", figure) == 150.0
    assert figures.median(measurements, "seed_torch", figure) == 60.0


def test_targets_pass_miss_or_say_not_measured():
    measurements = [
        fake("a", 0, 90.0, test_accuracy=0.946),
        fake("b", 0, 100.0, test_accuracy=0.95),
    ]
    floor = Comparison("a / b", "a", "b", "steady_examples_per_second", ">=", 0.8)
    ceiling = dataclasses.replace(floor, op="<=")
    points = Comparison("a - b", "a", "b", "test_accuracy", "±", 0.5)
    missing = dataclasses.replace(floor, b="c")
    report_only = dataclasses.replace(floor, op=None, bound=None)
    assert figures.evaluate(floor, measurements)["result"] == "PASS"
    assert figures.evaluate(ceiling, measurements)["result"] == "MISS"
    assert figures.evaluate(points, measurements)["value"] == pytest.approx(-0.4)
    assert figures.evaluate(points, measurements)["result"] == "PASS"
    assert figures.evaluate(missing, measurements)["result"] == "n/a"
    assert figures.evaluate(report_only, measurements)["result"] == ""


def compute_probe(round_index: int, peak: float) -> dict:
    return {
        "round": round_index,
        "train_flops_per_example": 1e6,
        "batch_size": 64,
        "matmul_peak_flops": peak,
        "matmul_size": 2048,
    }


def test_flops_per_second_are_paired_with_the_peak_of_their_own_round():
    measurements = [fake("a", 0, 100.0), fake("a", 1, 300.0), fake("b", 0, None)]
    probes = [compute_probe(0, 1e9), compute_probe(1, 6e9)]
    found = figures.compute([Variant("a", ""), Variant("b", "")], measurements, probes)
    assert found["matmul_peak_flops"] == 3.5e9
    assert [row["variant"] for row in found["rows"]] == ["a"]  # b has no steady figure
    # Rounds: 1e8 of 1e9 and 3e8 of 6e9; the ratio of the medians would say 2e8 / 3.5e9.
    assert found["rows"][0]["flops_per_second"] == 2e8
    assert found["rows"][0]["of_peak"] == pytest.approx(0.075)
    assert figures.compute([Variant("a", "")], measurements, []) is None
