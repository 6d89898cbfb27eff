"""The benchmark's arithmetic: one run's figures, medians over rounds, ratios paired per round.

Throughput on a shared machine swings by half between runs, so figures are
compared in pairs: within one round, variant / reference; the tables show the
median of those per-round ratios. This module imports no TensorFlow.
"""

import dataclasses
import statistics
from collections.abc import Callable, Sequence

from tf_mgpu.tools.benchmarks.variants import FIGURES, SEED, Comparison, Variant


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One run of one variant. `steady_examples_per_second` is None for a 1-epoch run."""

    variant: str
    round: int
    steady_examples_per_second: float | None
    first_epoch_seconds: float
    wall_seconds: float
    test_accuracy: float
    peak_memory_mib: float
    epoch_seconds: list[float]


def measurement(
    variant: str,
    round_index: int,
    epoch_seconds: list[float],
    epoch_examples: list[int],
    test_accuracy: float,
    peak_memory_mib: float,
    wall_seconds: float,
) -> Measurement:
    """Figures of one run; steady state is examples over seconds for epochs after the first."""
    steady = sum(epoch_examples[1:]) / sum(epoch_seconds[1:]) if len(epoch_seconds) > 1 else None
    return Measurement(
        variant=variant,
        round=round_index,
        steady_examples_per_second=steady,
        first_epoch_seconds=epoch_seconds[0],
        wall_seconds=wall_seconds,
        test_accuracy=test_accuracy,
        peak_memory_mib=peak_memory_mib,
        epoch_seconds=epoch_seconds,
    )


def from_summary(variant: str, round_index: int, summary: dict, wall_seconds: float) -> Measurement:
    """A Measurement from the summary.json of `tf_mgpu.main`."""
    history = summary["history"]
    return measurement(
        variant,
        round_index,
        [record["seconds"] for record in history],
        [record["train_examples"] for record in history],
        summary["test_accuracy"],
        summary["peak_host_memory_mib"],
        wall_seconds,
    )


def from_result(variant: str, round_index: int, result: dict, wall_seconds: float) -> Measurement:
    """A Measurement from the result line of a reference loop (see `tools.benchmarks.baselines`)."""
    seconds = result["epoch_seconds"]
    return measurement(
        variant,
        round_index,
        seconds,
        [result["train_examples_per_epoch"]] * len(seconds),
        result["test_accuracy"],
        result["peak_memory_mib"],
        wall_seconds,
    )


def values(measurements: Sequence[Measurement], variant: str, figure: str) -> dict[int, float]:
    """{round: figure} for every run of `variant` that has the figure."""
    return {
        m.round: getattr(m, figure)
        for m in measurements
        if m.variant == variant and getattr(m, figure) is not None
    }


def median(measurements: Sequence[Measurement], variant: str, figure: str) -> float | None:
    found = values(measurements, variant, figure)
    return statistics.median(found.values()) if found else None


def _divide(a: float, b: float) -> float:
    return a / b


def _points(a: float, b: float) -> float:
    return (a - b) * 100


def paired(
    measurements: Sequence[Measurement],
    a: str,
    b: str,
    figure: str,
    combine: Callable[[float, float], float] = _divide,
) -> float | None:
    """Median over rounds of `combine(a, b)`, pairing runs of the same round."""
    first, second = values(measurements, a, figure), values(measurements, b, figure)
    per_round = [combine(first[r], second[r]) for r in first if r in second]
    return statistics.median(per_round) if per_round else None


def evaluate(comparison: Comparison, measurements: Sequence[Measurement]) -> dict:
    """The comparison's medians, measured value and verdict: PASS, MISS, n/a or '' (no target)."""
    combine = _points if comparison.op == "±" else _divide
    a, b, figure = comparison.a, comparison.b, comparison.figure
    value = paired(measurements, a, b, figure, combine)
    return {
        **dataclasses.asdict(comparison),
        "a_median": median(measurements, a, figure),
        "b_median": median(measurements, b, figure),
        "value": value,
        "result": _verdict(comparison, value),
    }


def _verdict(comparison: Comparison, value: float | None) -> str:
    if comparison.bound is None:
        return ""
    if value is None:
        return "n/a"
    bound = comparison.bound
    passed = {">=": value >= bound, "<=": value <= bound, "±": abs(value) <= bound}
    return "PASS" if passed[comparison.op] else "MISS"


def table_rows(variants: Sequence[Variant], measurements: Sequence[Measurement]) -> list[dict]:
    """Per variant: runs, and for every figure its median and its paired ratio to the seed."""
    rows = []
    for variant in variants:
        row = {
            "variant": variant.name,
            "description": variant.description,
            "runs": len(values(measurements, variant.name, "wall_seconds")),
        }
        for figure in FIGURES:
            row[figure] = median(measurements, variant.name, figure)
            row[f"{figure}_x_seed"] = paired(measurements, variant.name, SEED, figure)
        rows.append(row)
    return rows


def compute(
    variants: Sequence[Variant], measurements: Sequence[Measurement], probes: Sequence[dict]
) -> dict | None:
    """FLOP/s each variant reached (steady examples/s x FLOP per example) and its share of
    the matmul peak measured in the same round, median over rounds; None without probes.

    Every variant of one benchmark trains the same model, so one FLOP count serves all
    (per example it hardly depends on the batch: the matmuls scale with it).
    """
    if not probes:
        return None
    flops = probes[0]["train_flops_per_example"]
    peaks = {probe["round"]: probe["matmul_peak_flops"] for probe in probes}
    rows = []
    for variant in variants:
        achieved = {r: x * flops for r, x in values(measurements, variant.name, FIGURES[0]).items()}
        if achieved:
            shares = [achieved[r] / peaks[r] for r in achieved if r in peaks]
            rows.append(
                {
                    "variant": variant.name,
                    "flops_per_second": statistics.median(achieved.values()),
                    "of_peak": statistics.median(shares) if shares else None,
                }
            )
    return {
        "train_flops_per_example": flops,
        "batch_size": probes[0]["batch_size"],
        "matmul_peak_flops": statistics.median(peaks.values()),
        "matmul_size": probes[0]["matmul_size"],
        "rows": rows,
    }
