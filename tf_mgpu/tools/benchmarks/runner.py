"""The benchmark: every variant in its own fresh process, interleaved over rounds.

Each round runs every selected variant once, the order rotated by one place
per round, so a shared machine's slow spells spread over all variants; the
figures are paired per round (`tf_mgpu.tools.benchmarks.figures`).

Per-epoch figures come from inside each process and count training steps only
(`tf_mgpu.tools.benchmarks.baselines` for the reference loops, `summary.json` for
`tf_mgpu.main`); the end-to-end wall is process start to exit, seen from here.
This module runs commands and reads their outputs: it imports no TensorFlow.
"""

import dataclasses
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence

from tf_mgpu import compile_cache
from tf_mgpu.cluster import local
from tf_mgpu.tasks.mnist import preflight
from tf_mgpu.tools.benchmarks import baselines, figures, startup, tables
from tf_mgpu.tools.benchmarks.figures import Measurement
from tf_mgpu.tools.benchmarks.variants import Plan, Settings, Variant

PACKAGES = ("tensorflow", "keras", "tensorflow-datasets", "numpy", "torch", "absl-py")


class RunError(Exception):
    """A run exited non-zero or left no result; the message holds its output's tail."""


def rotated(variants: Sequence[Variant], round_index: int) -> list[Variant]:
    """This round's order: the list rotated left by `round_index` places."""
    shift = round_index % len(variants) if variants else 0
    return [*variants[shift:], *variants[:shift]]


def command(variant: Variant, settings: Settings, model_dir: pathlib.Path | None) -> list[str]:
    """The argv that runs `variant` (one worker's, for a cluster)."""
    common = [
        f"--epochs={settings.epochs}",
        f"--train_split={settings.train_split}",
        f"--test_split={settings.test_split}",
    ]
    if settings.manual_dir is not None:  # MNIST's; a task of the user's own needs none
        common.append(f"--manual_dir={settings.manual_dir}")
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
    if any(arg.startswith("--strategy=") for arg in variant.main_args):
        strategy = []  # the variant's own
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


def run_variant(
    variant: Variant, settings: Settings, round_index: int, run_dir: pathlib.Path
) -> Measurement:
    """Runs `variant` once in fresh processes, logging into `run_dir`; RunError if it fails."""
    if variant.workers > 1:
        return _run_cluster(variant, settings, round_index, run_dir)
    if variant.first_run:
        settings = dataclasses.replace(settings, data_dir=first_run_data_dir(settings, run_dir))
    model_dir = run_dir / "model" if variant.main_args is not None else None
    done = _run_one(variant.name, command(variant, settings, model_dir), run_dir, settings)
    if model_dir is None:
        return figures.from_result(variant.name, round_index, _result(done), done.seconds)
    summary = _summary(model_dir, done)
    return figures.from_summary(variant.name, round_index, summary, done.seconds)


def first_run_data_dir(settings: Settings, run_dir: pathlib.Path) -> str:
    """A new TFDS data dir in `run_dir` holding what the shared one has prepared (linked, not
    copied) but none of tf_mgpu's caches: what a user's first run finds. One left by an
    earlier benchmark in the same --out is made anew (its caches are warm)."""
    shared = pathlib.Path(preflight.tfds_data_dir(settings.data_dir))
    fresh = run_dir / "tfds"
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir(parents=True)
        for entry in shared.iterdir():
            if entry.name != compile_cache.FOLDER:
                (fresh / entry.name).symlink_to(entry.resolve())
    except OSError as e:
        raise RunError(f"cannot make a first run's data dir from {shared}: {e}") from None
    return str(fresh)


def warm_up(
    variants: Sequence[Variant], settings: Settings, runs_dir: pathlib.Path
) -> dict[str, float]:
    """One untimed one-epoch run of each single-process tf_mgpu variant (`tf_mgpu_cold` and
    worker clusters aside): MNIST prepared and every variant's XLA program in the compile
    cache, so each measured run is a user's second run, in round 1 as in the others
    (`tf_mgpu_cold` measures the first). Returns each warm-up's seconds; RunError if one fails.
    """
    one_epoch = dataclasses.replace(settings, epochs=1)
    seconds = {}
    for variant in variants:
        if variant.main_args is None or variant.first_run or variant.workers > 1:
            continue
        run_dir = runs_dir / variant.name
        argv = command(variant, one_epoch, run_dir / "model")
        seconds[variant.name] = _run_one(variant.name, argv, run_dir, settings).seconds
    return seconds


def _run_one(
    name: str, argv: list[str], run_dir: pathlib.Path, settings: Settings
) -> local.Finished:
    """Runs `argv` as one process logging into `run_dir`; RunError unless it exits 0."""
    done = local.run_processes({name: (argv, local.environment())}, run_dir, settings.timeout)
    _check(done[name])
    return done[name]


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
    return figures.from_summary(variant.name, round_index, summary, chief.seconds)


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


def environment() -> dict:
    """Where and with what this benchmark ran."""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "cpu": _cpu_model(),
        "bf16": bf16_support(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
    }


def bf16_support(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's bfloat16 support, from its flags: 'AMX' (amx_bf16), 'AVX512_BF16' or 'none'."""
    try:
        with open(cpuinfo) as f:
            flags = next(
                (line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []
            )
    except OSError:
        flags = []
    if "amx_bf16" in flags:
        return "AMX"
    return "AVX512_BF16" if "avx512_bf16" in flags else "none"


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
    plan: Plan,
    settings: Settings,
    rounds: int,
    out: pathlib.Path,
    echo: Callable[[str], None] = print,
    command: str = "",
) -> dict:
    """Runs the plan `rounds` times, interleaved; prints the tables and writes them to `out`.

    Returns the report that `out/bench.json` holds, with `command` (the
    command line that ran it) for the report's readers. A failed run is reported
    (with its output's tail) and left out of the figures; the rest go on.
    """
    env = environment()
    echo(tables.header(env, settings, rounds, len(plan.variants)))
    found = measure(plan, settings, rounds, out / "runs", echo)
    report = {
        "command": command,
        "environment": env,
        "settings": dataclasses.asdict(settings),
        "rounds": rounds,
        "table": figures.table_rows(plan.variants, found.measurements),
        "scaling": [figures.evaluate(pair, found.measurements) for pair in plan.scaling],
        "targets": [figures.evaluate(target, found.measurements) for target in plan.targets],
        "startup": startup.summary(found.timed),
        "compute": figures.compute(plan.variants, found.measurements, found.compute),
        "failures": found.failures,
        "measurements": [dataclasses.asdict(m) for m in found.measurements],
        "startup_runs": [dataclasses.asdict(t) for t in found.timed],
        "compute_runs": found.compute,
    }
    echo(tables.format_report(report))
    echo(f"wrote {', '.join(str(path) for path in tables.write(report, out))}")
    return report


@dataclasses.dataclass
class Found:
    """Everything measured: runs of variants, start-up probes, compute probes, failures."""

    measurements: list[Measurement] = dataclasses.field(default_factory=list)
    timed: list[startup.Timed] = dataclasses.field(default_factory=list)  # start-up probes
    compute: list[dict] = dataclasses.field(default_factory=list)  # with their "round"
    failures: list[dict] = dataclasses.field(default_factory=list)

    def failed(self, what: str, round_index: int, log: str) -> None:
        self.failures.append({"variant": what, "round": round_index, "log": log})


def measure(
    plan: Plan,
    settings: Settings,
    rounds: int,
    runs_dir: pathlib.Path,
    echo: Callable[[str], None],
) -> Found:
    """The warm-up, then per round the probes and every variant once, in `rotated` order."""
    found = Found()
    try:
        warmed = warm_up(plan.variants, settings, runs_dir / "warm_up")
        if warmed:
            each = ", ".join(f"{name} {seconds:.1f}" for name, seconds in warmed.items())
            echo(f"warm-up (untimed, one epoch each; s): {each}")
    except RunError as e:
        found.failed("warm_up", 0, str(e))
        echo(f"warm-up FAILED (logs in {runs_dir / 'warm_up'})\n{e}")
    for round_index in range(rounds):
        round_dir = runs_dir / f"round{round_index + 1}"
        label = f"round {round_index + 1}/{rounds}  "
        if "startup" in plan.probes:
            _probe_startup(found, round_index, round_dir / "startup", label, echo)
        if "compute" in plan.probes:
            _probe_compute(found, settings, round_index, round_dir / "compute", label, echo)
        width = max(len(v.name) for v in plan.variants) + 2 if plan.variants else 0
        for variant in rotated(plan.variants, round_index):
            run_dir = round_dir / variant.name
            prefix = f"{label}{variant.name:<{width}}"
            try:
                measured = run_variant(variant, settings, round_index, run_dir)
            except RunError as e:
                found.failed(variant.name, round_index, str(e))
                echo(f"{prefix}FAILED (logs in {run_dir})\n{e}")
                continue
            found.measurements.append(measured)
            echo(prefix + tables.progress(measured))
    return found


def _probe_startup(found: Found, round_index: int, folder: pathlib.Path, label: str, echo) -> None:
    folder.mkdir(parents=True, exist_ok=True)  # an empty TFDS data dir for every probe
    for probe in startup.PROBES:
        try:
            timed = startup.run(probe, round_index, folder)
        except (startup.ProbeError, subprocess.TimeoutExpired) as e:
            found.failed(f"startup {probe.name}", round_index, str(e))
            echo(f"{label}startup {probe.name}: FAILED\n{e}")
            continue
        found.timed.append(timed)
    seconds = ", ".join(f"{t.probe} {t.seconds:.2f}" for t in found.timed if t.round == round_index)
    echo(f"{label}startup (s): {seconds}")


def _probe_compute(found: Found, settings: Settings, round_index: int, run_dir, label, echo):
    argv = command(Variant("compute", ""), settings, None)
    try:
        result = _result(_run_one("compute", argv, run_dir, settings))
    except RunError as e:
        found.failed("compute", round_index, str(e))
        echo(f"{label}compute FAILED (logs in {run_dir})\n{e}")
        return
    found.compute.append({**result, "round": round_index})
    echo(
        f"{label}compute: {result['train_flops_per_example']:,.0f} FLOP per example, "
        f"matmul peak {result['matmul_peak_flops'] / 1e9:,.1f} GFLOP/s"
    )
