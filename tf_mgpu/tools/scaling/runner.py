"""The batch-size x replicas sweep: one real training process per point, then a table and chart.

Every point runs `python -m tf_mgpu.main` (or one such process per worker on
loopback) with its own --model_dir under `OUT/runs/`, and becomes one row read
from that run's summary.json. A run that fails becomes a row with its error.
"""

import csv
import dataclasses
import json
import pathlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter

from tf_mgpu import strict_json
from tf_mgpu.cluster import local
from tf_mgpu.tools.scaling import ring_model

LR_MODES = ("fixed", "scaled")
RUNS = "runs"
CSV = "sweep.csv"
CHART = "sweep.png"
ALLREDUCE = "allreduce.json"
PREDICTIONS = "predictions.csv"
COLUMNS = (
    "name",
    "lr_mode",
    "workers",
    "replicas",
    "per_replica_batch",
    "global_batch",
    "learning_rate",
    "examples_per_second",
    "scaling_efficiency",
    "epoch_seconds",
    "first_epoch_seconds",
    "test_accuracy",
    "peak_host_memory_mib",
    "peak_gpu_memory_mib",
    "error",
)


@dataclasses.dataclass(frozen=True)
class Point:
    """One combination: `replicas` counts every replica in sync, over all `workers`."""

    lr_mode: str
    workers: int
    replicas: int
    per_replica_batch: int

    @property
    def name(self) -> str:
        return f"{self.lr_mode}_w{self.workers}_r{self.replicas}_b{self.per_replica_batch}"

    @property
    def global_batch(self) -> int:
        return self.replicas * self.per_replica_batch


def points(
    batch_sizes: Sequence[int],
    replicas: Sequence[int],
    workers: Sequence[int],
    lr_modes: Sequence[str],
) -> list[Point]:
    """One process: every replica count. W > 1 workers: one replica each, so W replicas."""
    shapes = [(1, r) for r in replicas if 1 in workers] + [(w, w) for w in workers if w > 1]
    return [Point(mode, w, r, b) for mode in lr_modes for w, r in shapes for b in batch_sizes]


def local_gpus() -> int:
    """GPUs `nvidia-smi` lists here (0 without it): the sweep then puts replicas on GPUs.

    Asked without TensorFlow, so the parent process stays light; each run's
    summary says how many replicas TensorFlow really used, and a row whose
    count differs from the point's is marked as an error.
    """
    if shutil.which("nvidia-smi") is None:
        return 0
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(line.startswith("GPU ") for line in listing.stdout.splitlines())


def _visible(gpus: Iterable[int]) -> dict[str, str]:
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus)}


@dataclasses.dataclass(frozen=True)
class Runner:
    """Runs points and measurements as real processes, each bounded by `timeout` seconds.

    `main_flags` go to every training run unchanged (data, splits, learning rate).
    With `gpus` > 0 each replica is a GPU, chosen with CUDA_VISIBLE_DEVICES;
    otherwise replicas are logical CPU devices of one process, or workers.
    """

    out_dir: pathlib.Path
    epochs: int
    main_flags: tuple[str, ...] = ()
    warmup_epochs: float = 0.0
    gpus: int = 0
    timeout: float = 1800.0
    startup_timeout: float = 120.0

    def run(self, point: Point) -> dict:
        """Trains `point` and returns its row; never raises for a failed run."""
        model_dir = self.out_dir / RUNS / point.name
        if self.gpus and self.gpus < point.replicas:
            return row(point, error=f"{point.replicas} replicas need GPUs; {self.gpus} here")
        if point.workers == 1:
            env = self._env(range(point.replicas))
            commands = {"main": (self._main_command(point, model_dir), env)}
        else:
            commands = self._cluster_commands(point, model_dir)
        finished = local.run_processes(commands, model_dir / "logs", self.timeout)
        failures = [f for f in finished.values() if f.returncode != 0]
        if failures:
            return row(point, error=failure_message(failures[0], self.timeout))
        return row(point, summary=json.loads((model_dir / "summary.json").read_text()))

    def _main_command(self, point: Point, model_dir: pathlib.Path) -> list[str]:
        devices = 1 if self.gpus or point.workers > 1 else point.replicas
        command = [
            sys.executable,
            "-m",
            "tf_mgpu.main",
            f"--strategy={'mirrored' if point.workers == 1 else 'multi_worker_mirrored'}",
            f"--num_cpu_devices={devices}",
            f"--batch_size={point.per_replica_batch}",
            f"--epochs={self.epochs}",
            f"--model_dir={model_dir}",
            "--clean",  # a point an earlier sweep left under the same --output_dir trains anew
            f"--startup_timeout={self.startup_timeout:g}",
            *self.main_flags,
        ]
        if point.lr_mode == "scaled":
            command += ["--scale_lr", f"--warmup_epochs={self.warmup_epochs:g}"]
        return command

    def _env(self, gpus: Iterable[int], tf_config: dict | None = None) -> dict:
        """This environment with `tf_config`, and with GPUs there are, only `gpus` visible.

        Worker i gets GPU i; a single process with R replicas gets the first R.
        """
        env = local.environment(tf_config)
        if self.gpus:
            env.update(_visible(gpus))
        return env

    def _cluster_commands(self, point: Point, model_dir: pathlib.Path) -> dict:
        """One process per worker on loopback; worker 0 is the chief and writes `model_dir`."""
        spec = local.cluster_spec(point.workers)
        commands = {}
        for task_type, index in local.tasks(spec):
            own_dir = model_dir if index == 0 else model_dir / f"worker{index}"
            commands[f"{task_type}:{index}"] = (
                self._main_command(point, own_dir),
                self._env([index], local.tf_config(spec, task_type, index)),
            )
        return commands

    def measure_allreduce(self, calls: int, per_call: int) -> dict[str, dict]:
        """Times the gradient's all-reduce over 2 replicas, per strategy, in processes of its own.

        `mirrored`: 2 devices of one process (2 GPUs where there are, else 2
        logical CPUs). `multi_worker_mirrored`: 2 worker processes on loopback.
        Returns `ring_model.measure_allreduce`'s results by strategy and writes
        them to ALLREDUCE; a measurement that fails is printed and left out.
        """
        results = {}
        for kind in ring_model.MEASURED:
            command = [
                sys.executable,
                "-m",
                "tf_mgpu.sweep",
                f"--measure_allreduce={kind}",
                f"--allreduce_calls={calls}",
                f"--allreduce_per_call={per_call}",
                f"--startup_timeout={self.startup_timeout:g}",
            ]
            log_dir = self.out_dir / "allreduce" / kind
            finished = local.run_processes(
                self._allreduce_commands(kind, command), log_dir, self.timeout
            )
            first = next(iter(finished.values()))  # the only process, or worker 0
            result = ring_model.parse_allreduce_line(first.stdout)
            if result is None:
                print(f"sweep: the {kind} all-reduce measurement failed\n{first.tail()}")
            else:
                results[kind] = result
        (self.out_dir / ALLREDUCE).write_text(strict_json.dumps(results, indent=2) + "\n")
        return results

    def _allreduce_commands(self, kind: str, command: list[str]) -> dict:
        if kind == "mirrored":
            return {"main": (command, self._env(range(2)))}
        spec = local.cluster_spec(2)
        return {
            f"worker:{i}": (command, self._env([i], local.tf_config(spec, "worker", i)))
            for i in range(2)
        }


def failure_message(finished: local.Finished, timeout: float) -> str:
    """One line: main's own 'tf_mgpu: error:' line, a timeout, or the last line of stderr."""
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("tf_mgpu: error:")]
    if errors:
        return f"{finished.name}: {errors[-1]}"
    if finished.returncode == -signal.SIGKILL:
        return f"{finished.name}: killed after {finished.seconds:.0f} s (timeout {timeout:g} s)"
    last = lines[-1] if lines else "no output"
    return f"{finished.name}: exit {finished.returncode}: {last}"


def row(point: Point, *, summary: dict | None = None, error: str | None = None) -> dict:
    """The point's CSV row: its figures from `summary`, or its `error` with empty figures."""
    result = dict.fromkeys(COLUMNS)
    result.update(
        name=point.name,
        lr_mode=point.lr_mode,
        workers=point.workers,
        replicas=point.replicas,
        per_replica_batch=point.per_replica_batch,
        global_batch=point.global_batch,
        error=error,
    )
    if summary is None:
        return result
    if summary["replicas"] != point.replicas:
        result["error"] = f"ran with {summary['replicas']} replicas, not {point.replicas}"
        return result
    history = summary["history"]
    steady = history[1:] or history
    gpu_peaks = summary.get("peak_gpu_memory_mib") or {}
    result.update(
        learning_rate=summary["learning_rate"],
        examples_per_second=summary["steady_examples_per_second"],
        epoch_seconds=sum(r["seconds"] for r in steady) / len(steady),
        first_epoch_seconds=summary["first_epoch_seconds"],
        # A task compiled without "accuracy" has none to chart.
        test_accuracy=summary.get("test_accuracy", float("nan")),
        peak_host_memory_mib=summary["peak_host_memory_mib"],
        peak_gpu_memory_mib=max(gpu_peaks.values(), default=None),
    )
    return result


def add_efficiency(rows: list[dict]) -> None:
    """Sets each row's scaling efficiency: examples/s / (replicas x 1 replica's examples/s).

    The reference is the one-process, one-replica row with the same
    per-replica batch and learning-rate mode; without one it stays empty.
    """
    single = {
        (r["lr_mode"], r["per_replica_batch"]): r["examples_per_second"]
        for r in rows
        if r["replicas"] == 1 and r["workers"] == 1 and r["error"] is None
    }
    for r in rows:
        reference = single.get((r["lr_mode"], r["per_replica_batch"]))
        if reference and r["error"] is None:
            r["scaling_efficiency"] = r["examples_per_second"] / (r["replicas"] * reference)


def write_csv(rows: Iterable[dict], path: pathlib.Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: pathlib.Path) -> list[dict]:
    """Rows as `write_csv` wrote them, numbers as numbers and empty cells as None."""
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _number(text: str):
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


_TABLE = (
    # (column, header, width, format)
    ("lr_mode", "lr", 6, ""),
    ("workers", "workers", 7, ""),
    ("replicas", "replicas", 8, ""),
    ("per_replica_batch", "batch/replica", 13, ""),
    ("global_batch", "global", 6, ""),
    ("examples_per_second", "examples/s", 10, ",.0f"),
    ("scaling_efficiency", "efficiency", 10, ".0%"),
    ("epoch_seconds", "epoch s", 7, ".2f"),
    ("test_accuracy", "test acc", 8, ".4f"),
    ("peak_host_memory_mib", "host MiB", 8, ",.0f"),
    ("peak_gpu_memory_mib", "GPU MiB", 7, ",.0f"),
)


def table(rows: Iterable[dict]) -> str:
    """The rows as aligned text; a failed row ends with its error."""
    lines = ["  ".join(f"{header:>{width}}" for _, header, width, _ in _TABLE) + "  error"]
    for r in rows:
        cells = [
            f"{'-' if r[column] is None else format(r[column], fmt):>{width}}"
            for column, _, width, fmt in _TABLE
        ]
        lines.append("  ".join(cells) + (f"  {r['error']}" if r["error"] else ""))
    return "\n".join(lines)


def chart(rows: Sequence[dict], path: pathlib.Path, title: str) -> None:
    """PNG: throughput and test accuracy against global batch, a line per replica count.

    Colour tells the replica count (and workers), the line style the
    learning-rate mode. Equal global batches train to equal weights whatever
    the replicas, so accuracy lines overlap: markers shrink line by line to
    keep each visible. Failed rows are left out.
    """
    figure = Figure(figsize=(12, 4.8), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    speed, accuracy = figure.subplots(1, 2)
    good = [r for r in rows if r["error"] is None]
    shapes = sorted({(r["workers"], r["replicas"]) for r in good})
    colours = {shape: f"C{i}" for i, shape in enumerate(shapes)}
    sizes = {shape: max(3, 10 - 2 * i) for i, shape in enumerate(shapes)}
    styles = dict(zip(LR_MODES, ("-", "--"), strict=True))
    for mode in LR_MODES:
        for shape in shapes:
            line = sorted(
                (r["global_batch"], r["examples_per_second"], r["test_accuracy"])
                for r in good
                if (r["workers"], r["replicas"]) == shape and r["lr_mode"] == mode
            )
            if not line:
                continue
            batch, examples, acc = zip(*line, strict=True)
            label = _label(*shape) + ("" if mode == "fixed" else ", scaled lr")
            style = {
                "color": colours[shape],
                "linestyle": styles[mode],
                "marker": "o",
                "markersize": sizes[shape],
            }
            speed.plot(batch, examples, label=label, **style)
            accuracy.plot(batch, acc, label=label, **style)
    batches = sorted({r["global_batch"] for r in good})
    for axes, ylabel in ((speed, "training examples/s"), (accuracy, "test accuracy")):
        axes.set_xscale("log", base=2)
        axes.set_xticks(batches, [str(b) for b in batches])
        axes.minorticks_off()
        axes.set_xlabel("global batch")
        axes.set_ylabel(ylabel)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    speed.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    figure.suptitle(title)
    figure.savefig(path)


def _label(workers: int, replicas: int) -> str:
    if workers > 1:
        return f"{workers} workers"
    return f"{replicas} replica" + ("s" if replicas > 1 else "")


def compute_from_rows(rows: Iterable[dict]) -> ring_model.Compute:
    """Compute time fitted to the 1-replica rows; a row's step takes batch / examples/s."""
    points = [
        (r["per_replica_batch"], r["per_replica_batch"] / r["examples_per_second"])
        for r in rows
        if r["replicas"] == 1 and r["workers"] == 1 and r["error"] is None
    ]
    return ring_model.fit_compute(points, f"fitted to {len(points)} measured 1-replica runs")


def comparison(rows: Iterable[dict], predictions: Iterable[ring_model.Prediction]) -> str:
    """Measured 2-replica rows beside the model's figures for the same setting and batch."""
    settings = {
        (1, 2): ring_model.MEASURED["mirrored"],
        (2, 2): ring_model.MEASURED["multi_worker_mirrored"],
    }
    predicted = {(p.setting, p.per_replica_batch): p for p in predictions}
    lines = [
        f"{'setting':<28} {'lr':<6} {'batch':>6} {'predicted ex/s':>14} {'measured ex/s':>13} "
        f"{'predicted eff':>13} {'measured eff':>12}"
    ]
    for r in rows:
        setting = settings.get((r["workers"], r["replicas"]))
        p = predicted.get((setting, r["per_replica_batch"]))
        if p is None or r["error"] is not None:
            continue
        measured_eff = r["scaling_efficiency"]
        lines.append(
            f"{setting:<28} {r['lr_mode']:<6} {r['per_replica_batch']:>6} "
            f"{p.examples_per_second:>14,.0f} {r['examples_per_second']:>13,.0f} "
            f"{p.efficiency:>13.0%} "
            f"{'-' if measured_eff is None else f'{measured_eff:.0%}':>12}"
        )
    return "\n".join(lines)


def write_predictions(predictions: Iterable[ring_model.Prediction], path: pathlib.Path) -> None:
    fields = [f.name for f in dataclasses.fields(ring_model.Prediction)]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(dataclasses.asdict(p) for p in predictions)
