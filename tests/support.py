"""Helpers for the tests: real MNIST subsets, CPU strategies, and real processes.

`run_processes` and friends run `python -m tf_mgpu.main` as real processes,
alone or as a TF_CONFIG cluster: every process gets its own TF_CONFIG, log
files and a time bound, and is killed in `finally`.
"""

import os
import pathlib
import sys
from collections.abc import Callable

import tensorflow as tf
from matplotlib import image

from tf_mgpu import data, local_cluster

ROOT = pathlib.Path(__file__).resolve().parent.parent
NUM_CPU_DEVICES = 4


def mnist_manual_dir() -> pathlib.Path:
    """The four original MNIST files; CI has them in ../shared beside the clone."""
    default = ROOT.parent / "shared" / "datasets" / "mnist"
    return pathlib.Path(os.environ.get("TF_MGPU_MNIST_DIR", default))


def subset(mnist: data.Mnist, train: int, test: int) -> data.Mnist:
    """The first `train` and `test` examples of each split."""
    return data.Mnist(
        train=data.Split(mnist.train.images[:train], mnist.train.labels[:train]),
        test=data.Split(mnist.test.images[:test], mnist.test.labels[:test]),
    )


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


Finished = local_cluster.Finished
free_ports = local_cluster.free_ports
cluster_spec = local_cluster.cluster_spec
environment = local_cluster.environment


def main_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf_mgpu.main", *args]


def run_processes(
    commands: dict[str, tuple[list[str], dict]], log_dir: pathlib.Path, timeout: float
) -> dict[str, Finished]:
    """Starts every (command, env) at once from the repository root; see local_cluster."""
    return local_cluster.run_processes(commands, log_dir, timeout, cwd=ROOT)


def run_cluster(
    spec: dict, args: Callable[[str], list[str]], log_dir: pathlib.Path, timeout: float
) -> dict[str, Finished]:
    """Runs main once per task of `spec`, each with its TF_CONFIG and `args(task_name)`.

    Results are keyed by task name: 'chief:0', 'worker:1'.
    """
    return local_cluster.run_cluster(
        spec,
        log_dir=log_dir,
        timeout=timeout,
        args_for=lambda name: main_command(*args(name)),
        cwd=ROOT,
    )


def run_main(args: list[str], log_dir: pathlib.Path, timeout: float, tf_config=None) -> Finished:
    """One `python -m tf_mgpu.main` process."""
    commands = {"main": (main_command(*args), environment(tf_config))}
    return run_processes(commands, log_dir, timeout)["main"]


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: pathlib.Path, min_width: int = 400, min_height: int = 200) -> None:
    """`path` is a PNG image that decodes, at least `min_width` x `min_height` pixels."""
    assert path.read_bytes()[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    pixels = image.imread(path)
    height, width = pixels.shape[:2]
    assert width >= min_width, pixels.shape
    assert height >= min_height, pixels.shape
