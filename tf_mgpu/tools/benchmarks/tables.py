"""The benchmark's report as text (the tables a run prints) and as files (JSON, CSV)."""

import csv
import pathlib
from collections.abc import Sequence

from tf_mgpu import strict_json
from tf_mgpu.tools.benchmarks.figures import Measurement
from tf_mgpu.tools.benchmarks.variants import Settings


def progress(m: Measurement) -> str:
    steady = _cell(m.steady_examples_per_second, ",.0f")
    return (
        f"steady {steady} ex/s  first epoch {m.first_epoch_seconds:.2f} s"
        f"  wall {m.wall_seconds:.1f} s  test acc {m.test_accuracy:.4f}"
    )


def header(env: dict, settings: Settings, rounds: int, count: int) -> str:
    """The lines that make a pasted run document itself."""
    packages = ", ".join(f"{name} {version}" for name, version in env["packages"].items())
    load = " ".join(f"{x:.2f}" for x in env["load_average"])
    return "\n".join(
        [
            f"tf_mgpu benchmark  {env['date']}  host {env['hostname']}",
            f"cpu: {env['cpu']}, {env['cores']} cores, bf16: {env.get('bf16', 'unknown')}, "
            f"load average {load}",
            f"python {env['python']}, {packages}",
            f"{rounds} rounds x {count} variants, each run in a fresh process, order rotated "
            f"per round; epochs={settings.epochs} train_split={settings.train_split} "
            f"test_split={settings.test_split}",
        ]
    )


# (column title, format) of each figure in the printed table.
_COLUMNS = {
    "steady_examples_per_second": ("steady ex/s", ",.0f"),
    "first_epoch_seconds": ("1st epoch s", ".2f"),
    "wall_seconds": ("wall s", ".1f"),
    "test_accuracy": ("test acc", ".4f"),
    "peak_memory_mib": ("peak MiB", ",.0f"),
}


def format_report(report: dict) -> str:
    """The main table with its legend, the scaling pairs and the targets, as text."""
    parts = [
        "Figures: median over rounds. 'x seed': median over rounds of the per-round ratio to "
        "seed_torch. Training time per epoch counts training steps only; steady state is "
        "every epoch after the first; wall is process start to exit.",
        format_table(report["table"]),
        "\n".join(f"  {row['variant']}: {row['description']}" for row in report["table"]),
    ]
    if report["scaling"]:
        parts += ["Scaling pairs (steady ex/s, ratio per round, median):"]
        parts += [_format_comparisons(report["scaling"], "a ex/s", "b ex/s")]
    if report.get("compute"):
        parts += [format_compute(report["compute"])]
    if report.get("startup"):
        parts += [format_startup(report["startup"])]
    if report["targets"]:
        parts += ["Targets:", _format_comparisons(report["targets"])]
    if report["failures"]:
        failed = ", ".join(f"{f['variant']} (round {f['round'] + 1})" for f in report["failures"])
        parts += [f"FAILED runs, left out of the figures: {failed}"]
    return "\n\n".join(parts)


def format_compute(compute: dict) -> str:
    """FLOP/s reached against the machine's matmul peak."""
    rows = [
        [
            row["variant"],
            _cell(row["flops_per_second"] / 1e9, ",.1f"),
            _cell(None if row["of_peak"] is None else row["of_peak"] * 100, ".0f") + "%",
        ]
        for row in compute["rows"]
    ]
    return "\n".join(
        [
            f"Compute: the training step does {compute['train_flops_per_example']:,.0f} FLOP "
            f"per example (forward and backward at batch {compute['batch_size']}, counted by "
            f"TensorFlow's profiler); this machine's matmul peak, float32 "
            f"{compute['matmul_size']}x{compute['matmul_size']} on every core, "
            f"{compute['matmul_peak_flops'] / 1e9:,.1f} GFLOP/s (median over rounds). "
            f"'of peak': per round, achieved / that round's peak, median.",
            _align(["variant", "GFLOP/s", "of peak"], rows),
        ]
    )


def format_startup(rows: Sequence[dict]) -> str:
    """The wall of every start-up probe against its target."""
    cells = [
        [
            row["command"],
            f"{row['median_seconds']:.2f}",
            f"{row['max_seconds']:.2f}",
            f"<= {row['target_seconds']:g} s",
            row["result"],
        ]
        for row in rows
    ]
    return "\n".join(
        [
            "Start-up without TensorFlow (python -m tf_mgpu.main, start to exit, over rounds):",
            _align(["command", "median s", "max s", "target", "result"], cells),
        ]
    )


def format_table(rows: Sequence[dict]) -> str:
    titles = ["variant"]
    for title, _ in _COLUMNS.values():
        titles += [title, "x seed"]
    cells = []
    for row in rows:
        line = [row["variant"]]
        for figure, (_, spec) in _COLUMNS.items():
            line += [_cell(row[figure], spec), _ratio(row[f"{figure}_x_seed"])]
        cells.append([*line, str(row["runs"])])
    return _align([*titles, "runs"], cells)


def _format_comparisons(evaluated: Sequence[dict], *sides: str) -> str:
    titles = ["comparison", *sides, "measured", "target", "result"]
    rows = []
    for e in evaluated:
        medians = [_cell(e["a_median"], ",.0f"), _cell(e["b_median"], ",.0f")] if sides else []
        rows.append([e["label"], *medians, _measured(e), _target(e), e["result"]])
    return _align(titles, rows)


def _measured(e: dict) -> str:
    if e["op"] == "±":
        return _cell(e["value"], "+.2f") + " pt"
    return _ratio(e["value"])


def _target(e: dict) -> str:
    if e["bound"] is None:
        return ""
    if e["op"] == "±":
        return f"± {e['bound']:g} pt"
    return f"{e['op']} {e['bound']:g}x"


def _cell(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _align(titles: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first left-aligned, the rest right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(titles, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = [cells[0].ljust(widths[0])]
        padded += [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join(padded).rstrip()

    return "\n".join([line(titles), *(line(row) for row in rows)])


def write(report: dict, out: pathlib.Path) -> list[pathlib.Path]:
    """Writes bench.json (everything) and table.csv, scaling.csv, targets.csv and startup.csv
    (those that have rows) into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "bench.json"]
    paths[0].write_text(strict_json.dumps(report, indent=2) + "\n")
    for name in ("table", "scaling", "targets", "startup"):
        if report.get(name):
            paths.append(out / f"{name}.csv")
            with open(paths[-1], "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(report[name][0]))
                writer.writeheader()
                writer.writerows(report[name])
    return paths
