"""Where a run's wall time went: import, data, build, compile, train, evaluate, export.

TensorFlow-free, so `main` can start the clock before TensorFlow loads. Every
second from the start to `breakdown()` is in exactly one phase: what no phase
claimed is `other` (flag parsing after the import, the epoch records, the
progress bar, collectives between epochs), so the parts add up to the total.
"""

import contextlib
import os
import time

PHASES = (
    "import",  # from the process's start: the interpreter, flags, TensorFlow's import
    "data",  # the task's load_data, and the checks on what it returned
    "build",  # the strategy (joining the cluster), the model, optimizer, restore
    "compile",  # tracing the training and evaluation calls, and XLA's compile
    "train",  # the compiled training calls
    "evaluate",  # the compiled evaluation calls
    "checkpoint",  # saving checkpoints during training
    "export",  # the weights, summary, .keras file and SavedModel at the end
)


def process_age() -> float:
    """Seconds since this process started, from /proc (Linux); 0.0 where that is unknown."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class Phases:
    """A clock started at construction (or at the process's start), charging time to phases."""

    def __init__(self, since_process_start: bool = False):
        self._start = time.monotonic() - (process_age() if since_process_start else 0.0)
        self.seconds = dict.fromkeys(PHASES, 0.0)

    def mark(self, name: str) -> None:
        """Charges to `name` every second since the start that no phase has claimed yet."""
        now = time.monotonic()
        claimed = sum(self.seconds.values())
        self.seconds[name] += max(0.0, (now - self._start) - claimed)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] += seconds

    @contextlib.contextmanager
    def phase(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] += time.monotonic() - started

    def breakdown(self) -> dict:
        """Seconds per phase, `other`, and `total` since the start; the parts sum to the total."""
        total = time.monotonic() - self._start
        parts = {name: round(value, 3) for name, value in self.seconds.items()}
        parts["other"] = round(max(0.0, total - sum(self.seconds.values())), 3)
        parts["total"] = round(total, 3)
        return parts


def line(breakdown: dict) -> str:
    """`tf_mgpu time: 9.8 s = import 5.6 + data 0.1 + ...`; phases under 0.05 s left out."""
    parts = [
        f"{name} {seconds:.1f}"
        for name, seconds in breakdown.items()
        if name != "total" and seconds >= 0.05
    ]
    return f"tf_mgpu time: {breakdown['total']:.1f} s = " + " + ".join(parts or ["0.0"])
