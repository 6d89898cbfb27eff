"""The benchmark: every variant in its own fresh process, interleaved over rounds.

Each round runs every selected variant once, the order rotated by one place
per round, so a shared machine's slow spells spread over all variants; the
figures are paired per round (`tf_mgpu.tools.bench.figures`).

Per-epoch figures come from inside each process and count training steps only
(`tf_mgpu.tools.bench.baselines` for the reference loops, `summary.json` for
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
import socket
import sys
from collections.abc import Callable, Sequence

from tf_mgpu.cluster import local
from tf_mgpu.tools.bench import baselines, figures, tables
from tf_mgpu.tools.bench.figures import Measurement
from tf_mgpu.tools.bench.variants import Comparison, Settings, Variant

PACKAGES = ("tensorflow", "keras", "tensorflow-datasets", "numpy", "torch", "absl-py")


class RunError(Exception):
    """A run exited non-zero or left no result; the message holds its output's tail."""


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
        return figures.from_result(variant.name, round_index, _result(done), done.seconds)
    summary = _summary(model_dir, done)
    return figures.from_summary(variant.name, round_index, summary, done.seconds)


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
    echo(tables.header(env, settings, rounds, len(variants)))
    measurements, failures = measure(variants, settings, rounds, out / "runs", echo)
    report = {
        "environment": env,
        "settings": dataclasses.asdict(settings),
        "rounds": rounds,
        "table": figures.table_rows(variants, measurements),
        "scaling": [figures.evaluate(pair, measurements) for pair in scaling],
        "targets": [figures.evaluate(target, measurements) for target in targets],
        "failures": failures,
        "measurements": [dataclasses.asdict(m) for m in measurements],
    }
    echo(tables.format_report(report))
    echo(f"wrote {', '.join(str(path) for path in tables.write(report, out))}")
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
            echo(prefix + tables.progress(found))
    return measurements, failures
