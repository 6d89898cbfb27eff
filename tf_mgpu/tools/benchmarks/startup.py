"""What a user waits for when TensorFlow is not needed: `--help` and user errors (`bench`).

Each probe is one fresh `python -m tf_mgpu.main` process whose answer needs no
TensorFlow (issue 15: under 1 s). It is timed from outside, start to exit, and
must exit with its code and say its own line: a probe that loaded TensorFlow
would take seconds, one that answered wrongly fails. The process runs under
`subprocess.run`, not `tf_mgpu.cluster.local.run_processes`, whose 20 ms
polling is coarse against 0.1 s. This module imports no TensorFlow.
"""

import dataclasses
import pathlib
import statistics
import subprocess
import sys
import time

from tf_mgpu import errors
from tf_mgpu.cluster import local

TARGET_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class Probe:
    """`python -m tf_mgpu.main *args` with TF_CONFIG `tf_config`, expected to exit `code`
    and print `says` (on either stream)."""

    name: str
    args: tuple[str, ...]
    code: int
    says: str
    tf_config: str | None = None

    def describe(self) -> str:
        shown = " ".join(self.args)
        return f"TF_CONFIG='{self.tf_config}' {shown}".strip() if self.tf_config else shown


PROBES = (
    # absl exits 1 after printing help.
    Probe("help", ("--help",), errors.EXIT_BUG, "--batch_size: Examples per replica"),
    Probe("flag_value", ("--batch_size=0",), errors.EXIT_USAGE, "flag --batch_size=0"),
    Probe("unknown_flag", ("--batch_sise=64",), errors.EXIT_USAGE, "flag 'batch_sise'"),
    Probe("tf_config", (), errors.EXIT_USER_ERROR, "TF_CONFIG is not valid JSON", "not json"),
    Probe(
        "task_file",
        ("--task=/nonexistent/task.py",),
        errors.EXIT_USER_ERROR,
        "--task=/nonexistent/task.py: no such file",
    ),
    Probe("model_dir", ("--model_dir=/dev/null",), errors.EXIT_USER_ERROR, "/dev/null is a file"),
    Probe(
        "manual_dir", ("--manual_dir=/nonexistent",), errors.EXIT_USER_ERROR, "/nonexistent lacks"
    ),
)


@dataclasses.dataclass(frozen=True)
class Timed:
    probe: str
    round: int
    seconds: float


class ProbeError(Exception):
    """A probe exited with another code than its own; the message holds its output."""


def run(probe: Probe, round_index: int, data_dir: pathlib.Path, timeout: float = 60.0) -> Timed:
    """Runs `probe` once with the TFDS data dir `data_dir`; ProbeError if it answers otherwise."""
    argv = [sys.executable, "-m", "tf_mgpu.main", f"--data_dir={data_dir}", *probe.args]
    began = time.perf_counter()
    done = subprocess.run(
        argv,
        env=local.environment(probe.tf_config),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    seconds = time.perf_counter() - began
    if done.returncode != probe.code or probe.says not in done.stdout + done.stderr:
        raise ProbeError(
            f"{probe.describe()}: exit {done.returncode}, expected {probe.code} and "
            f"{probe.says!r}\n{done.stderr[-2000:]}"
        )
    return Timed(probe.name, round_index, seconds)


def summary(timed: list[Timed]) -> list[dict]:
    """Per probe: its command, the median and slowest wall over rounds, and the verdict."""
    rows = []
    for probe in PROBES:
        seconds = [t.seconds for t in timed if t.probe == probe.name]
        if not seconds:
            continue
        rows.append(
            {
                "probe": probe.name,
                "command": probe.describe(),
                "runs": len(seconds),
                "median_seconds": statistics.median(seconds),
                "max_seconds": max(seconds),
                "target_seconds": TARGET_SECONDS,
                "result": "PASS" if statistics.median(seconds) <= TARGET_SECONDS else "MISS",
            }
        )
    return rows
