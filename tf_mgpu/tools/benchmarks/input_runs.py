"""Real `tf_mgpu.main` processes watched from outside, for `bench --input`.

What a run shows of itself without any hook in tf_mgpu:
- The first training step: the chief's progress bar, drawn only on a terminal, so its
  stdout is a pseudo-terminal here. It is drawn at the epoch's start (n steps of the
  epoch done, n > 0 when resumed) and redrawn after every compiled call; with
  --steps_per_loop=1 the first redraw with more steps done is the first step's end.
- Checkpoints: `--model_dir/checkpoints/ckpt-<step>.index` appears when a save is
  complete; the time each appears, and what each worker had read by then, give
  rates over windows of steps.
- Bytes read: per worker (the process started and its children, such as a
  multi-worker supervisor's trainer), by a `Counter` (see `tf_mgpu.tools.benchmarks.input_measure`).
A run is stopped by SIGKILL to its process group once its condition holds.
This module imports no TensorFlow.
"""

import dataclasses
import os
import pathlib
import pty
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

BAR = re.compile(rb"\| *(\d+)/(\d+) \[")
CHECKPOINT = re.compile(r"^ckpt-(\d+)\.index$")
POLL = 0.02  # seconds between looks at the checkpoints and the processes


class RunError(Exception):
    """A watched run failed, or timed out before its condition held; holds its logs' tail."""


@dataclasses.dataclass
class Seen:
    """What a watched run showed: seconds are from its processes' start."""

    name: str
    first_step: float | None = None  # the first redraw of the bar with more steps done
    start_step: int | None = None  # steps of the epoch done when the bar was first drawn
    # (step, seconds, bytes read by each worker) when each checkpoint appeared
    checkpoints: list[tuple[int, float, list[int]]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0  # until it was stopped or exited
    stopped: bool = False  # by SIGKILL, once its condition held
    returncode: int | None = None

    def last_checkpoint(self) -> int:
        return self.checkpoints[-1][0] if self.checkpoints else -1


Counter = Callable[[list[int]], list[int]]  # the started processes' pids -> bytes each read


@dataclasses.dataclass(frozen=True)
class Process:
    """One process to start: its argv and environment; `model_dir` is watched for
    checkpoints (the chief's)."""

    argv: Sequence[str]
    env: dict[str, str]


def watch(
    name: str,
    processes: Sequence[Process],
    model_dir: pathlib.Path,
    log_dir: pathlib.Path,
    until: Callable[[Seen], bool],
    timeout: float,
    counter: Counter,
) -> Seen:
    """Starts `processes` (the first one's stdout on a pseudo-terminal, for its bar),
    watches them until `until(seen)` holds (then SIGKILLs them) or they exit; RunError if
    one fails, or the time runs out, before `until` held."""
    log_dir.mkdir(parents=True, exist_ok=True)
    seen = Seen(name)
    started, running, files = time.monotonic(), [], []
    master, terminal = pty.openpty()
    reader = threading.Thread(
        target=_read_bar, args=(master, log_dir / f"{name}.out", seen, started), daemon=True
    )
    try:
        for k, process in enumerate(processes):
            err = open(log_dir / f"{name}.{k}.err", "w")  # noqa: SIM115 (closed below)
            out = terminal if k == 0 else open(log_dir / f"{name}.{k}.out", "w")  # noqa: SIM115
            files += [err] if k == 0 else [err, out]
            running.append(
                subprocess.Popen(
                    list(process.argv),
                    env=process.env,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # its own group: SIGKILL reaches its children
                )
            )
        os.close(terminal)
        terminal = None
        reader.start()
        pids = [p.pid for p in running]
        known: set[int] = set()
        while True:
            now = time.monotonic() - started
            for step in sorted(_checkpoints(model_dir) - known):
                known.add(step)
                seen.checkpoints.append((step, now, counter(pids)))
            if until(seen):
                seen.stopped = True
                break
            codes = [p.poll() for p in running]
            if any(code not in (None, 0) for code in codes) or all(c == 0 for c in codes):
                seen.returncode = next((c for c in codes if c), 0)
                break
            if now > timeout:
                raise RunError(f"{name}: still running after {timeout:.0f} s\n{tail(log_dir)}")
            time.sleep(POLL)
        seen.seconds = time.monotonic() - started
    finally:
        for process in running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if terminal is not None:
            os.close(terminal)
        reader.join(timeout=5)
        for f in files:
            f.close()
    if not seen.stopped:
        raise RunError(
            f"{name}: exited {seen.returncode} before its measurement was done\n{tail(log_dir)}"
        )
    return seen


def _read_bar(master: int, path: pathlib.Path, seen: Seen, started: float) -> None:
    """Copies the terminal's output to `path`, noting when the bar first shows a step done."""
    text = b""
    with open(path, "wb") as log:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed: every process exited
                break
            if not chunk:
                break
            log.write(chunk)
            now = time.monotonic() - started
            text = text[-200:] + chunk
            for done, _ in BAR.findall(text):
                if seen.start_step is None:
                    seen.start_step = int(done)
                elif seen.first_step is None and int(done) > seen.start_step:
                    seen.first_step = now
            text = text[-200:]
    os.close(master)


def _checkpoints(model_dir: pathlib.Path) -> set[int]:
    """Steps of the complete checkpoints: TensorFlow creates the index while it merges
    the save's parts (an empty file, then `ckpt-N_temp/` is removed), so a run killed
    when the index merely appears would leave a checkpoint no one can read."""
    folder = model_dir / "checkpoints"
    try:
        names = set(os.listdir(folder))
        steps = {int(m.group(1)) for m in map(CHECKPOINT.match, names) if m}
        return {
            s
            for s in steps
            if f"ckpt-{s}_temp" not in names and (folder / f"ckpt-{s}.index").stat().st_size
        }
    except OSError:  # the folder, or a save's files, changing as we look
        return set()


def drop_after(model_dir: pathlib.Path, step: int) -> None:
    """Deletes the checkpoints newer than `step` (a run stopped a save or two late), so the
    next run resumes from `step` exactly, as if stopped there."""
    folder = model_dir / "checkpoints"
    late = [s for s in _checkpoints(model_dir) if s > step]
    for name in os.listdir(folder) if late else []:
        if name.startswith(tuple(f"ckpt-{s}." for s in late)):
            (folder / name).unlink()


def tail(log_dir: pathlib.Path, lines: int = 15) -> str:
    """The last lines of every log of a run, for its failure's message."""
    parts = []
    for path in sorted(log_dir.glob("*.out")) + sorted(log_dir.glob("*.err")):
        text = path.read_bytes().decode(errors="replace").replace("\r", "\n")
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        parts.append(f"--- {path.name}\n" + "\n".join(kept))
    return "\n".join(parts)


# -- what processes read ---------------------------------------------------------------


def tree(root: int) -> list[int]:
    """`root` and every process descended from it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rchar(pid: int) -> int:
    """Bytes the process passed through read() and pread() so far (page cache or not),
    from /proc/<pid>/io; 0 if it is gone. Pages of a memory map are not counted."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
