"""Helpers for the tests: real MNIST subsets, CPU strategies, and real processes.

`run_processes` and friends run `python -m tf_mgpu.main` as real processes,
alone or as a TF_CONFIG cluster: every process gets its own TF_CONFIG, log
files and a time bound, and is killed in `finally`.
"""

import dataclasses
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import tensorflow as tf

from tf_mgpu import data

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


@dataclasses.dataclass(frozen=True)
class Finished:
    name: str
    returncode: int
    stdout: str
    stderr: str

    def tail(self, lines: int = 25) -> str:
        out = "\n".join(self.stdout.splitlines()[-lines:])
        err = "\n".join(self.stderr.splitlines()[-lines:])
        return f"--- {self.name} exit {self.returncode}\nstdout:\n{out}\nstderr:\n{err}"

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(prefix)]


def main_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf_mgpu.main", *args]


def environment(tf_config: dict | str | None = None) -> dict:
    """This environment with TF_CONFIG replaced: a dict as JSON, a str as given (even malformed)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    if tf_config is not None:
        env["TF_CONFIG"] = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
    return env


def free_ports(count: int) -> list[int]:
    """Loopback ports free now (held open together, so they are distinct)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_spec(workers: int, chief: bool = False) -> dict:
    """A TF_CONFIG 'cluster' on free loopback ports: an optional chief, then workers."""
    ports = [f"localhost:{port}" for port in free_ports(workers + chief)]
    spec = {"worker": ports[chief:]}
    if chief:
        spec["chief"] = ports[:1]
    return spec


def run_processes(
    commands: dict[str, tuple[list[str], dict]], log_dir: pathlib.Path, timeout: float
) -> dict[str, Finished]:
    """Starts every (command, env) at once and waits for all, `timeout` seconds at most.

    Whatever is still running at the deadline is killed; so is everything
    else if this function itself fails.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    running = {}
    try:
        for name, (command, env) in commands.items():
            with (
                open(log_dir / f"{name}.out", "w") as out,
                open(log_dir / f"{name}.err", "w") as err,
            ):
                running[name] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        for process in running.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
    finally:
        for process in running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait()
    return {
        name: Finished(
            name,
            process.returncode,
            (log_dir / f"{name}.out").read_text(),
            (log_dir / f"{name}.err").read_text(),
        )
        for name, process in running.items()
    }


def run_cluster(
    spec: dict, args: Callable[[str], list[str]], log_dir: pathlib.Path, timeout: float
) -> dict[str, Finished]:
    """Runs main once per task of `spec`, each with its TF_CONFIG and `args(task_name)`.

    Results are keyed by task name: 'chief:0', 'worker:1'.
    """
    commands = {}
    for task_type, addresses in spec.items():
        for index in range(len(addresses)):
            tf_config = {"cluster": spec, "task": {"type": task_type, "index": index}}
            name = f"{task_type}:{index}"
            commands[name] = (main_command(*args(name)), environment(tf_config))
    return run_processes(commands, log_dir, timeout)


def run_main(args: list[str], log_dir: pathlib.Path, timeout: float, tf_config=None) -> Finished:
    """One `python -m tf_mgpu.main` process."""
    commands = {"main": (main_command(*args), environment(tf_config))}
    return run_processes(commands, log_dir, timeout)["main"]
