"""The measurements of `bench --input`, on a dataset written by `tf_mgpu.tools.synthetic`.

Per format (memmap: examples/synthetic_memmap_task.py, read by index; tfrecord:
examples/synthetic_tfrecord_task.py, a tf.data stream of shard files), all at one
global batch, one replica per worker, --steps_per_loop=1 (so the bar marks the first
step) and a checkpoint every tenth of an epoch (K steps):
- `chain`, on full/ and on subset/: a fresh run, timed to its first step and killed
  at its first checkpoint (step K, 10%); a run resumed from there, timed to its first
  step (resume at 10%), which trains on to step 9K (90%) and is killed there; a run
  resumed from 9K, timed to its first step (resume at 90%). The middle run's
  checkpoints from 2K to 9K give the training examples/s and the bytes one worker
  reads per step.
- `two_workers`, on full/: 2 MultiWorkerMirroredStrategy workers at half the batch
  each, from scratch to step 3K; their checkpoints from K to 3K give each worker's
  bytes read per step (--stream_shard=file for the stream, where tf_mgpu has it).
- `probe`, on full/: the per-worker pipeline alone (`tf_mgpu.tools.benchmarks.input_probe`).
Bytes are counted by the reader: for memmap, the bytes the task's `__getitem__`
returned (its SYNTHETIC_READ_LOG counts); for tfrecord, /proc/<pid>/io rchar (bytes
through read(), from the page cache or the disk) of the worker's processes.
This module imports no TensorFlow.
"""

import concurrent.futures
import dataclasses
import json
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable

import tf_mgpu
from tf_mgpu.cluster import local
from tf_mgpu.tools.benchmarks import input_runs
from tf_mgpu.tools.benchmarks.input_runs import Process, RunError

FORMATS = ("memmap", "tfrecord")
SIZES = ("full", "subset")
EXAMPLES = pathlib.Path(tf_mgpu.__file__).resolve().parent.parent / "examples"


@dataclasses.dataclass(frozen=True)
class Settings:
    data: pathlib.Path  # holds full/ and subset/
    out: pathlib.Path
    batch: int = 64  # global: one worker takes it all, each of two workers half
    formats: tuple[str, ...] = FORMATS
    probe_seconds: float = 20.0
    timeout: float = 3600.0  # per run
    jobs: int = 1  # runs at once: 1 for timing; more only to check the harness quickly


def task_file(fmt: str) -> pathlib.Path:
    return EXAMPLES / f"synthetic_{fmt}_task.py"


def meta(folder: pathlib.Path) -> dict:
    try:
        return json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError) as e:
        raise RunError(
            f"{folder} holds no dataset of tf_mgpu.tools.synthetic ({e}); write one with "
            f"python -m tf_mgpu.tools.synthetic --out=DIR"
        ) from None


def cadence(train: int, batch: int, folder: pathlib.Path) -> tuple[int, int]:
    """(steps per epoch, K = a tenth of them); RunError under 10 steps."""
    steps = train // batch
    if steps < 10:
        raise RunError(f"{folder}: {train} examples make {steps} steps of {batch}; need 10")
    return steps, steps // 10


def check(settings: Settings) -> None:
    """RunError unless full/ and subset/ hold datasets of at least 10 steps each."""
    for size in SIZES:
        folder = settings.data / size
        cadence(meta(folder)["train"], settings.batch, folder)


def environment(folder: pathlib.Path, reads: pathlib.Path | None, tf_config=None) -> dict:
    """The tasks' environment: their data, and where the memmap task logs what it reads
    (None: nowhere, so the input alone is timed without its logging)."""
    env = local.environment(tf_config)
    env["SYNTHETIC_DIR"] = str(folder)
    env.pop("SYNTHETIC_READ_LOG", None)
    if reads is not None:
        reads.mkdir(parents=True, exist_ok=True)
        env["SYNTHETIC_READ_LOG"] = str(reads)
    return env


def main_args(fmt: str, batch: int, every: int, model_dir: pathlib.Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tf_mgpu.main",
        f"--task={task_file(fmt)}",
        f"--batch_size={batch}",
        "--epochs=1",
        "--steps_per_loop=1",
        f"--checkpoint_steps={every}",
        "--compile_cache=none",
        f"--model_dir={model_dir}",
    ]


def counter(fmt: str, reads: pathlib.Path) -> input_runs.Counter:
    """Bytes each started process and its children have read (see the module's doc)."""
    if fmt == "memmap":
        return lambda pids: [sum(_logged(reads, p) for p in input_runs.tree(r)) for r in pids]
    return lambda pids: [sum(input_runs.rchar(p) for p in input_runs.tree(r)) for r in pids]


def _logged(reads: pathlib.Path, pid: int) -> int:
    try:
        counts = json.loads((reads / f"reads.{pid}.json").read_text())
    except (OSError, ValueError):
        return 0
    return sum(split["bytes"] for split in counts.values())


def window(checkpoints: list, batch: int) -> dict:
    """Rates between the first and last checkpoints seen: steps, examples/s, and each
    worker's bytes read per step."""
    (first, began, read0), (last, ended, read1) = checkpoints[0], checkpoints[-1]
    steps = last - first
    return {
        "from_step": first,
        "to_step": last,
        "examples_per_second": steps * batch / max(ended - began, 1e-9),
        "bytes_per_step": [(b - a) / steps for a, b in zip(read0, read1, strict=True)],
    }


def chain(fmt: str, size: str, settings: Settings) -> dict:
    folder = settings.data / size
    info = meta(folder)
    steps, every = cadence(info["train"], settings.batch, folder)
    run_dir = settings.out / fmt / size
    model_dir, reads = run_dir / "model", run_dir / "reads"
    args = main_args(fmt, settings.batch, every, model_dir)
    env = environment(folder, reads)
    count = counter(fmt, reads)

    def run(name: str, argv: list[str], until: Callable) -> input_runs.Seen:
        seen = input_runs.watch(
            name, [Process(argv, env)], model_dir, run_dir, until, settings.timeout, count
        )
        if seen.first_step is None:
            raise RunError(f"{name}: no training step seen\n{input_runs.tail(run_dir)}")
        return seen

    fresh = run("fresh", [*args, "--clean"], lambda s: s.last_checkpoint() >= every)
    input_runs.drop_after(model_dir, every)
    at10 = run("resume10", args, lambda s: s.last_checkpoint() >= 9 * every)
    input_runs.drop_after(model_dir, 9 * every)
    at90 = run("resume90", args, lambda s: s.first_step is not None)
    return {
        "unit": f"chain {fmt} {size}",
        "train_examples": info["train"],
        "dataset_bytes": info["train"] * info["example_bytes"],
        "steps_per_epoch": steps,
        "first_step_seconds": fresh.first_step,
        "resume_seconds": {"10": at10.first_step, "90": at90.first_step},
        "resume_steps": {"10": at10.start_step, "90": at90.start_step},
        "one_worker": window(at10.checkpoints[1:], settings.batch),
    }


def two_workers(fmt: str, settings: Settings, shard: list[str]) -> dict:
    folder = settings.data / "full"
    info = meta(folder)
    steps, every = cadence(info["train"], settings.batch, folder)
    run_dir, spec = settings.out / fmt / "two_workers", local.cluster_spec(2)
    reads = run_dir / "reads"
    processes = [
        Process(
            [
                *main_args(fmt, settings.batch // 2, every, run_dir / f"worker_{i}"),
                "--clean",
                "--strategy=multi_worker_mirrored",
                "--startup_timeout=120",
                *shard,
            ],
            environment(folder, reads, local.tf_config(spec, "worker", i)),
        )
        for i in range(2)
    ]
    seen = input_runs.watch(
        "two_workers",
        processes,
        run_dir / "worker_0",
        run_dir,
        lambda s: s.last_checkpoint() >= 3 * every,
        settings.timeout,
        counter(fmt, reads),
    )
    if fmt == "memmap":
        sharding = "read by index"
    else:
        sharding = " ".join(shard) or "no --stream_shard in this tf_mgpu: every worker reads all"
    return {
        "unit": f"two_workers {fmt}",
        "steps_per_epoch": steps,
        "sharding": sharding,
        "two_workers": window(seen.checkpoints, settings.batch),
    }


def probe(fmt: str, settings: Settings) -> dict:
    folder = settings.data / "full"
    run_dir = settings.out / fmt / "probe"
    argv = [
        sys.executable,
        "-m",
        "tf_mgpu.tools.benchmarks.input_probe",
        f"--task={task_file(fmt)}",
        f"--batch={settings.batch}",
        f"--seconds={settings.probe_seconds}",
    ]
    env = environment(folder, None)
    done = local.run_processes({"probe": (argv, env)}, run_dir, settings.timeout)["probe"]
    lines = done.lines("{")
    if done.returncode != 0 or not lines:
        raise RunError(done.tail())
    return {"unit": f"probe {fmt}", "input": json.loads(lines[-1])}


def stream_shard_flag() -> list[str]:
    """['--stream_shard=file'] if this tf_mgpu.main has that flag (each worker its own
    files of a file-based tf.data dataset), else [] (every worker reads every file)."""
    done = subprocess.run(
        [sys.executable, "-m", "tf_mgpu.main", "--helpfull"],
        capture_output=True,
        text=True,
        timeout=120,
        env=local.environment(),
    )
    return ["--stream_shard=file"] if "--stream_shard" in done.stdout + done.stderr else []


def _timed(function: Callable, *args) -> dict:
    began = time.monotonic()
    return {**function(*args), "unit_seconds": time.monotonic() - began}


def measure(settings: Settings, echo: Callable[[str], None]) -> tuple[list[dict], list[dict]]:
    """Every unit of every format, `settings.jobs` at once; (results, failures)."""
    shard = stream_shard_flag()
    units = []
    for fmt in settings.formats:
        units += [(chain, fmt, size, settings) for size in SIZES]
        units += [(two_workers, fmt, settings, shard if fmt == "tfrecord" else [])]
        units += [(probe, fmt, settings)]
    results, failures = [], []
    with concurrent.futures.ThreadPoolExecutor(settings.jobs) as pool:
        futures = {pool.submit(_timed, *unit): unit for unit in units}
        for future in concurrent.futures.as_completed(futures):
            function, fmt, *rest = futures[future]
            name = " ".join([function.__name__, fmt, *[r for r in rest if isinstance(r, str)]])
            try:
                result = {**future.result(), "format": fmt}
            except (RunError, OSError, subprocess.SubprocessError) as e:
                failures.append({"unit": name, "log": str(e)})
                echo(f"{name}: FAILED\n{e}")
                continue
            results.append(result)
            echo(f"{name}: done in {result['unit_seconds']:.0f} s")
    return results, failures
