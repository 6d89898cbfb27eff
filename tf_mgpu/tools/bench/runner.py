"""The benchmark: every variant in its own fresh process, interleaved over rounds; the tables.

Each round runs every selected variant once, the order rotated by one place
per round, so a shared machine's slow spells spread over all variants.
Throughput on such a machine swings by half between runs, so figures are
compared in pairs: within one round, variant / reference; the tables show the
median of those per-round ratios.

Per-epoch figures come from inside each process and count training steps only
(`tf_mgpu.tools.bench.baselines` for the reference loops, `summary.json` for
`tf_mgpu.main`); the end-to-end wall is process start to exit, seen from here.
This module runs commands and reads their outputs: it imports no TensorFlow.
"""

import csv
import dataclasses
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import socket
import statistics
import sys
from collections.abc import Callable, Sequence

from tf_mgpu.cluster import local
from tf_mgpu.errors import UserError
from tf_mgpu.tools.bench import baselines

SEED = "seed_torch"
FIGURES = (
    "steady_examples_per_second",
    "first_epoch_seconds",
    "wall_seconds",
    "test_accuracy",
    "peak_memory_mib",
)
PACKAGES = ("tensorflow", "keras", "tensorflow-datasets", "numpy", "torch", "absl-py")
MWMS_BATCHES = (128, 512, 2048)


@dataclasses.dataclass(frozen=True)
class Settings:
    """What every run shares: data, epochs, and how long one process may take."""

    manual_dir: str
    data_dir: str | None = None
    # What tf_mgpu.main trains. The reference loops (the seed's PyTorch loop, Keras fit,
    # the XLA floor) are mnist_mlp's recipe, so they run only for it.
    task: str = "mnist_mlp"
    epochs: int = 10
    train_split: str = "train"
    test_split: str = "test"
    timeout: float = 3600.0


@dataclasses.dataclass(frozen=True)
class Variant:
    """One command to measure.

    `main_args` None: the reference loop of `tf_mgpu.tools.bench.baselines` named `name`.
    Otherwise `python -m tf_mgpu.main` with these flags, as `workers`
    multi_worker_mirrored processes on loopback if `workers` > 1.
    """

    name: str
    description: str
    main_args: tuple[str, ...] | None = None
    workers: int = 1


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Variant `a` against variant `b` on one figure, per round, median over rounds.

    `op` '>=' or '<=': the ratio a / b against `bound`; '±': the difference
    a - b in points (hundredths) whose size must not exceed `bound`; None:
    the ratio. Without a `bound`, the value is reported with no target.
    """

    label: str
    a: str
    b: str
    figure: str
    op: str | None = None
    bound: float | None = None


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


class RunError(Exception):
    """A run exited non-zero or left no result; the message holds its output's tail."""


TABLE = (
    Variant(SEED, "the seed's PyTorch loop: DataParallel on the CPU, batch 64"),
    Variant("keras_fit", "Keras model.fit under MirroredStrategy, batch 64"),
    Variant("tf_mgpu", "python -m tf_mgpu.main, defaults", ()),
    Variant("tf_mgpu_nojit", "--nojit_compile", ("--nojit_compile",)),
    Variant("tf_mgpu_loop1", "--steps_per_loop=1", ("--steps_per_loop=1",)),
    Variant("tf_mgpu_stream", "--input=stream", ("--input=stream",)),
    Variant(
        "tf_mgpu_all_off",
        "--input=stream --steps_per_loop=1 --nojit_compile (about the previous release)",
        ("--input=stream", "--steps_per_loop=1", "--nojit_compile"),
    ),
    Variant("tf_mgpu_bf16", "--dtype=mixed_bfloat16", ("--dtype=mixed_bfloat16",)),
    Variant("xla_floor", "raw TensorFlow, no strategy, no Keras, one XLA call per epoch"),
)

TARGETS = (
    Comparison("steady ex/s, tf_mgpu / seed_torch", "tf_mgpu", SEED, FIGURES[0], ">=", 3.0),
    Comparison("steady ex/s, tf_mgpu / keras_fit", "tf_mgpu", "keras_fit", FIGURES[0], ">=", 7.0),
    Comparison("end-to-end wall, tf_mgpu / seed_torch", "tf_mgpu", SEED, "wall_seconds", "<=", 0.7),
    # "Test accuracy unchanged" by the speed options: the same recipe with them all off.
    Comparison(
        "test accuracy, tf_mgpu - tf_mgpu_all_off",
        "tf_mgpu",
        "tf_mgpu_all_off",
        "test_accuracy",
        "±",
        0.5,
    ),
    # For information: PyTorch initialises Linear layers otherwise than Keras (uniform
    # +-1/sqrt(fan_in) weights and biases against Glorot weights and zero biases).
    Comparison("test accuracy, tf_mgpu - seed_torch", "tf_mgpu", SEED, "test_accuracy", "±"),
)


# Any task other than mnist_mlp: tf_mgpu's XLA choices against Keras fit of the same task.
TASK_TABLE = (
    Variant("keras_fit_task", "Keras model.fit of the task as compiled, batch 64, then evaluate"),
    Variant("tf_mgpu", "python -m tf_mgpu.main --task=..., defaults (--jit_compile=auto)", ()),
    Variant("tf_mgpu_jit", "--jit_compile (XLA forced)", ("--jit_compile",)),
    Variant("tf_mgpu_nojit", "--nojit_compile", ("--nojit_compile",)),
    Variant(
        "task_floor",
        "the task's model in the plainest tf.function step: no strategy, XLA or metrics, batch 64",
    ),
)
TASK_TARGETS = (
    Comparison(
        "steady ex/s, tf_mgpu / keras_fit_task", "tf_mgpu", "keras_fit_task", FIGURES[0], ">=", 1.8
    ),
    Comparison(
        "end-to-end wall, tf_mgpu / keras_fit_task",
        "tf_mgpu",
        "keras_fit_task",
        "wall_seconds",
        "<=",
        0.65,
    ),
    # --jit_compile=auto within 10% of the better of forced XLA and no XLA.
    Comparison("steady ex/s, auto / XLA forced", "tf_mgpu", "tf_mgpu_jit", FIGURES[0], ">=", 0.9),
    Comparison("steady ex/s, auto / no XLA", "tf_mgpu", "tf_mgpu_nojit", FIGURES[0], ">=", 0.9),
    Comparison(
        "test accuracy, tf_mgpu - keras_fit_task", "tf_mgpu", "keras_fit_task", "test_accuracy", "±"
    ),
    # For information: how far above fit any loop gets with this model here, and tf_mgpu's
    # distance to that floor.
    Comparison(
        "steady ex/s, task_floor / keras_fit_task", "task_floor", "keras_fit_task", FIGURES[0]
    ),
    Comparison("steady ex/s, tf_mgpu / task_floor", "tf_mgpu", "task_floor", FIGURES[0]),
)


def single(batch: int) -> Variant:
    """One process on one device at `batch`: the reference of the scaling pairs."""
    description = f"1 process, 1 device, batch {batch}"
    return Variant(f"single_{batch}", description, (f"--batch_size={batch}",))


def mirroring_pair() -> tuple[list[Variant], Comparison]:
    """2 logical CPUs at 64 each against 1 device at 128: the cost of mirroring."""
    two = Variant(
        "mirrored_2x64",
        "1 process, 2 logical CPUs, batch 64 each",
        ("--num_cpu_devices=2", "--batch_size=64"),
    )
    ratio = Comparison(
        "mirroring: 2 CPUs x 64 / 1 x 128", two.name, "single_128", FIGURES[0], ">=", 0.8
    )
    return [two, single(128)], ratio


def mirroring_without_xla_pair() -> tuple[list[Variant], Comparison]:
    """The same pair with XLA off on both sides: mirroring's own cost, apart from XLA's
    advantage on one device (XLA cannot span two devices; see tf_mgpu.engine.loop)."""
    two = Variant(
        "mirrored_2x64_nojit",
        "1 process, 2 logical CPUs, batch 64 each, --nojit_compile",
        ("--num_cpu_devices=2", "--batch_size=64", "--nojit_compile"),
    )
    one = Variant(
        "single_128_nojit",
        "1 process, 1 device, batch 128, --nojit_compile",
        ("--batch_size=128", "--nojit_compile"),
    )
    label = "mirroring, no XLA either side: 2 CPUs x 64 / 1 x 128"
    return [two, one], Comparison(label, two.name, one.name, FIGURES[0])


def mwms_pair(global_batch: int) -> tuple[list[Variant], Comparison]:
    """2 worker processes on loopback at G/2 each against 1 process at G."""
    half = global_batch // 2
    two = Variant(
        f"mwms_2x{half}",
        f"2 multi_worker_mirrored processes on loopback, batch {half} each",
        (f"--batch_size={half}",),
        workers=2,
    )
    op, bound = (">=", 0.5) if global_batch == 512 else (None, None)
    label = f"multi-worker: 2 workers x {half} / 1 x {global_batch}"
    return [two, single(global_batch)], Comparison(
        label, two.name, f"single_{global_batch}", FIGURES[0], op, bound
    )


def select(
    only: Sequence[str] | None, mwms_batches: Sequence[int], task: str = "mnist_mlp"
) -> tuple[list[Variant], list[Comparison], list[Comparison]]:
    """(variants to run, scaling pairs, targets) for `--only` names, or everything.

    Names are the table's variants and the pairs 'mirroring' and 'mwms_G'. For a
    task other than mnist_mlp the reference loops (which train mnist_mlp) are left out.
    """
    for batch in mwms_batches:
        if batch < 2 or batch % 2:
            raise UserError(f"--mwms_batches: {batch} is not an even global batch >= 2")
    pairs = {"mirroring": mirroring_pair(), "mirroring_nojit": mirroring_without_xla_pair()}
    pairs.update({f"mwms_{g}": mwms_pair(g) for g in mwms_batches})
    table = {variant.name: variant for variant in (TABLE if task == "mnist_mlp" else TASK_TABLE)}
    names = list(only) if only else [*table, *pairs]
    unknown = [name for name in names if name not in table and name not in pairs]
    if unknown:
        raise UserError(
            f"--only: unknown {', '.join(unknown)}; choose from {', '.join([*table, *pairs])}"
        )
    variants = {}
    for name in names:
        for variant in pairs[name][0] if name in pairs else [table[name]]:
            variants.setdefault(variant.name, variant)
    scaling = [pairs[name][1] for name in names if name in pairs]
    given = TARGETS if task == "mnist_mlp" else TASK_TARGETS
    # The given ones all show (those without a bound for information); a scaling pair
    # without one shows in the scaling section only.
    targets = [*given, *(t for t in scaling if t.op is not None)]
    return list(variants.values()), scaling, [t for t in targets if {t.a, t.b} <= set(variants)]


def rotated(variants: Sequence[Variant], round_index: int) -> list[Variant]:
    """This round's order: the list rotated left by `round_index` places."""
    shift = round_index % len(variants)
    return [*variants[shift:], *variants[:shift]]


def command(variant: Variant, settings: Settings, model_dir: pathlib.Path | None) -> list[str]:
    """The argv that runs `variant` (one worker's, for a cluster)."""
    common = [
        f"--manual_dir={settings.manual_dir}",
        f"--epochs={settings.epochs}",
        f"--train_split={settings.train_split}",
        f"--test_split={settings.test_split}",
    ]
    if settings.data_dir is not None:
        common.append(f"--data_dir={settings.data_dir}")
    if variant.main_args is None:
        reference = ["-m", "tf_mgpu.bench", f"--variant={variant.name}", f"--task={settings.task}"]
        return [sys.executable, *reference, *common]
    strategy = (
        ["--strategy=multi_worker_mirrored", "--startup_timeout=120"]
        if variant.workers > 1
        else ["--strategy=mirrored"]
    )
    return [
        sys.executable,
        "-m",
        "tf_mgpu.main",
        *common,
        f"--task={settings.task}",
        f"--model_dir={model_dir}",
        # Every run trains from scratch: a model dir an earlier bench left under the same
        # --out would otherwise be resumed, and its old summary measured.
        "--clean",
        *strategy,
        *variant.main_args,
    ]


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
    """A Measurement from the result line of a reference loop (see `tools.bench.baselines`)."""
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


def run_variant(
    variant: Variant, settings: Settings, round_index: int, run_dir: pathlib.Path
) -> Measurement:
    """Runs `variant` once in fresh processes, logging into `run_dir`; RunError if it fails."""
    if variant.workers > 1:
        return _run_cluster(variant, settings, round_index, run_dir)
    model_dir = run_dir / "model" if variant.main_args is not None else None
    commands = {variant.name: (command(variant, settings, model_dir), local.environment())}
    done = local.run_processes(commands, run_dir, settings.timeout)[variant.name]
    _check(done)
    if model_dir is None:
        return from_result(variant.name, round_index, _result(done), done.seconds)
    summary = _summary(model_dir, done)
    return from_summary(variant.name, round_index, summary, done.seconds)


def _run_cluster(
    variant: Variant, settings: Settings, round_index: int, run_dir: pathlib.Path
) -> Measurement:
    """One process per worker, each with its model dir; worker 0, the chief, writes the summary."""
    done = local.run_cluster(
        local.cluster_spec(variant.workers),
        log_dir=run_dir,
        timeout=settings.timeout,
        args_for=lambda task: command(variant, settings, run_dir / task.replace(":", "_")),
    )
    for finished in done.values():
        _check(finished)
    chief = done["worker:0"]
    summary = _summary(run_dir / "worker_0", chief)
    return from_summary(variant.name, round_index, summary, chief.seconds)


def _check(done: local.Finished) -> None:
    if done.returncode != 0:
        raise RunError(done.tail())


def _result(done: local.Finished) -> dict:
    try:
        return baselines.parse_result(done.stdout)
    except ValueError as e:
        raise RunError(f"{e}\n{done.tail()}") from None


def _summary(model_dir: pathlib.Path, done: local.Finished) -> dict:
    try:
        return json.loads((model_dir / "summary.json").read_text())
    except (OSError, ValueError) as e:
        raise RunError(f"no summary.json in {model_dir} ({e})\n{done.tail()}") from None


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


def environment() -> dict:
    """Where and with what this benchmark ran."""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def run(
    variants: Sequence[Variant],
    scaling: Sequence[Comparison],
    targets: Sequence[Comparison],
    settings: Settings,
    rounds: int,
    out: pathlib.Path,
    echo: Callable[[str], None] = print,
) -> dict:
    """Runs every variant `rounds` times, interleaved; prints the tables and writes them to `out`.

    Returns the report that `out/bench.json` holds. A failed run is reported
    (with its output's tail) and left out of the figures; the rest go on.
    """
    env = environment()
    echo(header(env, settings, rounds, len(variants)))
    measurements, failures = measure(variants, settings, rounds, out / "runs", echo)
    report = {
        "environment": env,
        "settings": dataclasses.asdict(settings),
        "rounds": rounds,
        "table": table_rows(variants, measurements),
        "scaling": [evaluate(pair, measurements) for pair in scaling],
        "targets": [evaluate(target, measurements) for target in targets],
        "failures": failures,
        "measurements": [dataclasses.asdict(m) for m in measurements],
    }
    echo(format_report(report))
    echo(f"wrote {', '.join(str(path) for path in write(report, out))}")
    return report


def measure(
    variants: Sequence[Variant],
    settings: Settings,
    rounds: int,
    runs_dir: pathlib.Path,
    echo: Callable[[str], None],
) -> tuple[list[Measurement], list[dict]]:
    """Every variant once per round, in `rotated` order; (measurements, failures)."""
    measurements, failures = [], []
    for round_index in range(rounds):
        for variant in rotated(variants, round_index):
            run_dir = runs_dir / f"round{round_index + 1}" / variant.name
            prefix = f"round {round_index + 1}/{rounds}  {variant.name:<16}"
            try:
                found = run_variant(variant, settings, round_index, run_dir)
            except RunError as e:
                failures.append({"variant": variant.name, "round": round_index, "log": str(e)})
                echo(f"{prefix}FAILED (logs in {run_dir})\n{e}")
                continue
            measurements.append(found)
            echo(prefix + progress(found))
    return measurements, failures


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
            f"cpu: {env['cpu']}, {env['cores']} cores, load average {load}",
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
    if report["targets"]:
        parts += ["Targets:", _format_comparisons(report["targets"])]
    if report["failures"]:
        failed = ", ".join(f"{f['variant']} (round {f['round'] + 1})" for f in report["failures"])
        parts += [f"FAILED runs, left out of the figures: {failed}"]
    return "\n\n".join(parts)


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
    """Writes bench.json (everything) and table.csv, scaling.csv, targets.csv into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "bench.json"]
    paths[0].write_text(json.dumps(report, indent=2) + "\n")
    for name in ("table", "scaling", "targets"):
        if report[name]:
            paths.append(out / f"{name}.csv")
            with open(paths[-1], "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(report[name][0]))
                writer.writeheader()
                writer.writerows(report[name])
    return paths
