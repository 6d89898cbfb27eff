"""Helpers for the tests: real MNIST subsets, CPU strategies, and real processes.

`run_processes` and friends run `python -m tf_mgpu.main` as real processes,
alone or as a TF_CONFIG cluster: every process gets its own TF_CONFIG, log
files and a time bound, and is killed in `finally`. A run in one process is
forked from one that has already imported TensorFlow (tests/forkserver.py),
unless the test asks for a `fresh` one.
"""

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import tensorflow as tf
from matplotlib import image
from PIL import Image

from tests import forkserver
from tf_mgpu.cluster import local
from tf_mgpu.engine.input.data import Data

ROOT = pathlib.Path(__file__).resolve().parent.parent
NUM_CPU_DEVICES = 4


def mnist_manual_dir() -> pathlib.Path:
    """The four original MNIST files; CI has them in ../shared beside the clone."""
    default = ROOT.parent / "shared" / "datasets" / "mnist"
    return pathlib.Path(os.environ.get("TF_MGPU_MNIST_DIR", default))


def subset(mnist: Data, train: int, test: int) -> Data:
    """The first `train` and `test` examples of each split."""
    return Data(train=mnist.train.take(slice(0, train)), test=mnist.test.take(slice(0, test)))


def cpu_strategy(replicas: int) -> tf.distribute.Strategy:
    """A MirroredStrategy over the first `replicas` logical CPUs, or OneDevice for one."""
    names = [d.name for d in tf.config.list_logical_devices("CPU")][:replicas]
    if replicas == 1:
        return tf.distribute.OneDeviceStrategy(names[0])
    fresh_collective_keys()
    return tf.distribute.MirroredStrategy(names)


def fresh_collective_keys() -> None:
    """Call before building another MirroredStrategy in this process.

    Each MirroredStrategy numbers its collective groups from 1 + this base, so
    a 4-replica strategy created after a 2-replica one in the same process
    joins the wrong group ("joining a group with size4, but that group has
    size 2"). TensorFlow's own tests move the base per strategy; a real run
    builds one strategy per process and never needs to.
    """
    tf.distribute.MirroredStrategy._collective_key_base += 10_000


Finished = local.Finished
free_ports = local.free_ports
cluster_spec = local.cluster_spec


def environment(tf_config=None) -> dict[str, str]:
    """The test process's environment for a child, with its own TF_CONFIG, and without the
    XLA flags an in-process `tf_mgpu.train` left behind: each child picks its own compile
    cache, as a fresh process would."""
    env = local.environment(tf_config)
    env.pop("TF_XLA_FLAGS", None)
    return env


def main_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf_mgpu.main", *args]


def run_processes(
    commands: dict[str, tuple[list[str], dict]],
    log_dir: pathlib.Path,
    timeout: float,
    fresh: bool = False,
) -> dict[str, Finished]:
    """Starts every (command, env) at once from the repository root; see tf_mgpu.cluster.local.

    A run of main, evaluate or predict is forked from a process that has imported TensorFlow
    (tests/forkserver.py) unless `fresh`: a test of what happens while TensorFlow loads."""
    start = forkserver.starter(fresh)
    return local.run_processes(commands, log_dir, timeout, cwd=ROOT, start=start)


def run_cluster(
    spec: dict, args: Callable[[str], list[str]], log_dir: pathlib.Path, timeout: float
) -> dict[str, Finished]:
    """Runs main once per task of `spec`, each with its TF_CONFIG and `args(task_name)`.

    Results are keyed by task name: 'chief:0', 'worker:1'.
    """
    return local.run_cluster(
        spec,
        log_dir=log_dir,
        timeout=timeout,
        args_for=lambda name: main_command(*args(name)),
        cwd=ROOT,
    )


def run_main(
    args: list[str], log_dir: pathlib.Path, timeout: float, tf_config=None, fresh: bool = False
) -> Finished:
    """One `python -m tf_mgpu.main` process (forked unless `fresh`: see `run_processes`)."""
    commands = {"main": (main_command(*args), environment(tf_config))}
    return run_processes(commands, log_dir, timeout, fresh)["main"]


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: pathlib.Path, min_width: int = 400, min_height: int = 200) -> None:
    """`path` is a PNG image that decodes, at least `min_width` x `min_height` pixels."""
    assert path.read_bytes()[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    pixels = image.imread(path)
    height, width = pixels.shape[:2]
    assert width >= min_width, pixels.shape
    assert height >= min_height, pixels.shape


WEIGHTS_LINE = re.compile(
    r"^tf_mgpu weights: sha256=([0-9a-f]{64})(?: \(identical on all (\d+) workers\))?$", re.M
)


def digests(finished: Finished) -> dict[str, str]:
    """The sha256 of the final weights from the chief's last line, and how many workers
    the chief found holding the same ones: {"sha256": ..., "workers": ...}."""
    found = WEIGHTS_LINE.findall(finished.stdout)
    assert found, f"no weights line\n{finished.tail()}"
    digest, workers = found[-1]
    return {"sha256": digest, "workers": workers or "1"}


def assert_quiet_worker(finished: Finished) -> None:
    """A task other than the chief prints its start line and nothing else."""
    lines = finished.stdout.splitlines()
    assert len(lines) == 1, finished.tail()
    assert lines[0].startswith("tf_mgpu start:"), finished.tail()


class Started:
    """A `python -m tf_mgpu.main` process running in its own session, logs in `log_dir`
    (forked unless `fresh`: see `run_processes`)."""

    def __init__(
        self,
        args: list[str],
        log_dir: pathlib.Path,
        name: str = "main",
        tf_config=None,
        fresh: bool = False,
    ):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self._out, self._err = log_dir / f"{name}.out", log_dir / f"{name}.err"
        with open(self._out, "w") as out, open(self._err, "w") as err:
            self.process = forkserver.starter(fresh)(
                main_command(*args),
                cwd=ROOT,
                env=environment(tf_config),
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.started = time.monotonic()
        self.exited_at: float | None = None  # wall-clock time, set by `wait_all`

    def stdout(self) -> str:
        """What it printed so far."""
        return self._out.read_text()

    def signal_group(self, number: int) -> None:
        """Sends `number` to every process of this task (the supervisor and its trainer)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)

    def wait(self, timeout: float) -> Finished:
        """Waits for the exit; kills the whole group if `timeout` passes first."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            self.signal_group(signal.SIGKILL)
            self.process.wait()
        return Finished(
            self.name,
            self.process.returncode,
            self._out.read_text(),
            self._err.read_text(),
            time.monotonic() - self.started,
        )


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.02)


def checkpoint_steps(model_dir: pathlib.Path) -> list[int]:
    """Steps of the complete checkpoints in `model_dir`, oldest first."""
    found = (model_dir / "checkpoints").glob("ckpt-*.index")
    steps = (p.name[len("ckpt-") : -len(".index")] for p in found)
    return sorted(int(step) for step in steps if step.isdigit())  # not ckpt-8.input-0


def kill_mid_epoch(
    args: list[str], log_dir, model_dir: pathlib.Path, steps_per_epoch: int, after_epochs: int = 0
) -> int:
    """Starts a run, SIGKILLs it once it has saved mid-epoch (after `after_epochs` whole
    epochs); returns its newest checkpoint."""
    run = Started(args, log_dir, name="killed")
    after = after_epochs * steps_per_epoch
    try:
        wait_until(
            lambda: any(s % steps_per_epoch and s > after for s in checkpoint_steps(model_dir)),
            timeout=120,
            what="a mid-epoch checkpoint",
        )
        run.signal_group(signal.SIGKILL)
    finally:
        killed = run.wait(30)
    assert killed.returncode == -signal.SIGKILL, killed.tail()
    assert not (model_dir / "summary.json").exists(), "the run finished before the kill"
    return checkpoint_steps(model_dir)[-1]


def error_lines(finished: Finished) -> list[str]:
    """The lines tf_mgpu itself printed to stderr (TensorFlow's own start-up lines aside)."""
    return [line for line in finished.stderr.splitlines() if line.startswith("tf_mgpu: ")]


def assert_one_line_exit(finished: Finished, code: int, expected: str) -> str:
    """Exit `code`, exactly one tf_mgpu line on stderr containing `expected`, no traceback."""
    assert finished.returncode == code, finished.tail()
    lines = error_lines(finished)
    assert len(lines) == 1, finished.tail()
    assert expected in lines[0], finished.tail()
    assert "Traceback" not in finished.stderr, finished.tail()
    return lines[0]


def start_cluster(
    spec: dict, args: Callable[[str], list[str]], log_dir: pathlib.Path
) -> dict[str, Started]:
    """Starts main once per task of `spec`, each in its own session; keyed by task name."""
    return {
        f"{kind}:{index}": Started(
            args(f"{kind}:{index}"),
            log_dir,
            name=f"{kind}_{index}",
            tf_config=local.tf_config(spec, kind, index),
        )
        for kind, index in local.tasks(spec)
    }


def wait_all(started: dict[str, Started], timeout: float) -> dict[str, Finished]:
    """Waits for every task at once (each one's exit is seen within 20 ms), `timeout` at most."""
    deadline = time.monotonic() + timeout
    running = dict(started)
    while running and time.monotonic() < deadline:
        for name, task in list(running.items()):
            if task.process.poll() is not None:
                task.exited_at = time.time()
                del running[name]
        time.sleep(0.02)
    return {name: task.wait(0) for name, task in started.items()}


def lingered(task: Started, chief: Started | None = None) -> float:
    """Seconds from the last output (stdout or stderr) of `chief` (default: the task itself)
    to the task's exit seen by `wait_all`. Other workers are quiet after their start-up
    line, so the chief's last line is when their work ended too."""
    chief = chief or task
    last_output = max(chief._out.stat().st_mtime, chief._err.stat().st_mtime)
    return task.exited_at - last_output


def group_gone(task: Started) -> bool:
    """No process of the task's session is left (supervisor and trainer alike)."""
    try:
        os.killpg(task.process.pid, 0)
    except ProcessLookupError:
        return True
    return False


def checkpoint_tensors(prefix: pathlib.Path) -> dict:
    """Every tensor of checkpoint `prefix`, read from its files (so a truncated one fails)."""
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def on_paper(pixels: np.ndarray, ink=(0, 0, 0), scale: int = 1) -> Image.Image:
    """MNIST `pixels` drawn in `ink` on white RGB paper, each pixel `scale` x `scale`."""
    strength = np.kron(pixels, np.ones((scale, scale), np.uint8)).astype(np.float64) / 255
    paper = np.full((*strength.shape, 3), 255.0)
    drawn = paper * (1 - strength[..., None]) + np.array(ink, np.float64) * strength[..., None]
    return Image.fromarray(np.round(drawn).astype(np.uint8), "RGB")
