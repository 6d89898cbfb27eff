"""Several real worker processes on this machine's loopback, each with its own TF_CONFIG.

The benchmark and the sweep use it to measure MultiWorkerMirroredStrategy
without a second machine; every process is bounded in time and killed if
anything goes wrong. It runs commands; it knows nothing about training.
"""

import dataclasses
import json
import os
import pathlib
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence


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


def tasks(spec: dict) -> list[tuple[str, int]]:
    """Every (task type, index) of a cluster spec, chief first."""
    order = sorted(spec, key=lambda task_type: task_type != "chief")
    return [(task_type, i) for task_type in order for i in range(len(spec[task_type]))]


def tf_config(spec: dict, task_type: str, index: int) -> dict:
    """The TF_CONFIG of task (`task_type`, `index`) of cluster `spec`."""
    return {"cluster": spec, "task": {"type": task_type, "index": index}}


def environment(
    tf_config: dict | str | None = None, base: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """`base` with TF_CONFIG replaced: a dict as JSON, a str as given (even malformed)."""
    env = {k: v for k, v in base.items() if k != "TF_CONFIG"}
    if tf_config is not None:
        env["TF_CONFIG"] = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
    return env


@dataclasses.dataclass(frozen=True)
class Finished:
    name: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from this process's start to its exit, as seen from outside

    def tail(self, lines: int = 25) -> str:
        out = "\n".join(self.stdout.splitlines()[-lines:])
        err = "\n".join(self.stderr.splitlines()[-lines:])
        return f"--- {self.name} exit {self.returncode}\nstdout:\n{out}\nstderr:\n{err}"

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(prefix)]


def run_processes(
    commands: Mapping[str, tuple[Sequence[str], Mapping[str, str]]],
    log_dir: pathlib.Path,
    timeout: float,
    cwd: str | os.PathLike | None = None,
    start=subprocess.Popen,
) -> dict[str, Finished]:
    """Starts every (command, env) at once and waits for all, `timeout` seconds at most.

    Whatever is still running at the deadline is killed; so is everything
    else if this function itself fails. Output goes to files in `log_dir`.
    `start` starts each one (a `subprocess.Popen` or what answers as one).
    """
    log_dir = pathlib.Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    running, started, ended = {}, {}, {}
    try:
        for name, (command, env) in commands.items():
            safe = name.replace(":", "_")
            with (
                open(log_dir / f"{safe}.out", "w") as out,
                open(log_dir / f"{safe}.err", "w") as err,
            ):
                started[name] = time.monotonic()
                running[name] = start(list(command), cwd=cwd, env=dict(env), stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        pending = dict(running)
        while pending and time.monotonic() < deadline:
            for name, process in list(pending.items()):
                if process.poll() is not None:
                    ended[name] = time.monotonic()
                    del pending[name]
            time.sleep(0.02)
    finally:
        for process in running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait()
    now = time.monotonic()
    return {
        name: Finished(
            name,
            process.returncode,
            *(path.read_text() for path in _logs(log_dir, name)),
            ended.get(name, now) - started[name],
        )
        for name, process in running.items()
    }


def _logs(log_dir: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    safe = name.replace(":", "_")
    return log_dir / f"{safe}.out", log_dir / f"{safe}.err"


def run_cluster(
    spec: dict,
    command: Sequence[str] | None = None,
    *,
    log_dir: pathlib.Path,
    timeout: float,
    args_for=None,
    cwd: str | os.PathLike | None = None,
    base_env: Mapping[str, str] = os.environ,
) -> dict[str, Finished]:
    """Runs one process per task of `spec`, each with its own TF_CONFIG.

    Each task runs `command`, or `args_for(task_name)` where given. Results
    are keyed by task name: 'chief:0', 'worker:1'. `free_ports` cannot hold
    its ports until the workers bind them, so another process may take one
    first: then the whole cluster runs again on new ports, twice at most.
    """
    for attempt in range(_BIND_ATTEMPTS):
        commands = {}
        for task_type, index in tasks(spec):
            name = f"{task_type}:{index}"
            argv = args_for(name) if args_for is not None else command
            commands[name] = (argv, environment(tf_config(spec, task_type, index), base_env))
        finished = run_processes(commands, log_dir, timeout, cwd=cwd)
        if attempt + 1 == _BIND_ATTEMPTS or not any(map(lost_a_port, finished.values())):
            return finished
        spec = cluster_spec(
            len(spec.get("worker", [])), chief="chief" in spec
        )  # the same shape on new ports
    raise AssertionError("unreachable")


_BIND_ATTEMPTS = 3
_BIND_FAILURES = ("Address already in use", "Could not start gRPC server", "Failed to bind")


def lost_a_port(finished: Finished) -> bool:
    """Whether a task failed because another process bound its port first."""
    return finished.returncode != 0 and any(text in finished.stderr for text in _BIND_FAILURES)
