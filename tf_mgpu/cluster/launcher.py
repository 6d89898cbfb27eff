"""N workers of `python -m tf_mgpu.main` on this machine, like `torchrun --nproc-per-node=N`.

The split of work is torchrun's: the launcher owns the processes' lifetime,
the trainer owns resume. The launcher

- with `private_network`, first moves itself into a network namespace of its
  own that holds only loopback, where the kernel allows (tf_mgpu.cluster.netns):
  the workers' ports (TensorFlow's gRPC servers bind every interface) are then
  reachable by the workers only; a line says which case holds. Where the kernel
  refuses, it starts no worker, in one line naming --noprivate_network (open ports,
  accepted);
- gives every worker its own TF_CONFIG, on loopback ports that are free
  when the group starts (a fresh set for every start), and its own equal share
  of this machine's GPUs (tf_mgpu.cluster.gpus);
- prints every line a worker writes, after its name: `[worker:1] epoch ...`
  (stdout to stdout, stderr to stderr);
- passes SIGINT and SIGTERM on to every worker as SIGTERM, so that all of
  them save the same checkpoint and exit 75; a second signal kills them;
- when a worker fails, gives the others `grace` seconds to exit on their
  own (a worker in training notices the lost peer within about 10 s, usually
  at once, and exits 6), then sends SIGTERM (which also ends a worker still
  waiting for its peers), then after as long again SIGKILL;
- with `max_restarts`, starts the whole group again after a failure, with
  the same flags, so that training resumes from the last checkpoint in
  --model_dir. A worker never restarts itself;
- with `min_workers` below `workers`, restarts without the worker that
  failed first, taken as lost for good, while at least `min_workers` remain,
  and passes main `--batch_workers=<workers>` so that the global batch stays
  the same (see tf_mgpu.cluster.elastic).

`Launcher.run` returns the exit code for the launcher: the first failing
worker's (128 + N for a worker killed by signal N), or 0 when every worker
succeeded. It imports no TensorFlow: it starts in a moment and stays small
while the workers train.
"""

import collections
import contextlib
import ctypes
import dataclasses
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import BinaryIO, TextIO

from tf_mgpu import errors
from tf_mgpu.cluster import elastic, gpus, local, netns

MAIN = (sys.executable, "-m", "tf_mgpu.main")
SEPARATOR = "--"

# Outcomes that a restart from the same checkpoint with the same flags would
# only repeat, and a stop, which someone asked for. Any other failure (a
# lost or killed worker, a peer that never started, a crash) is restarted.
NOT_RESTARTED = {
    errors.EXIT_USAGE: "a bad command line fails the same way again",
    errors.EXIT_USER_ERROR: "bad input fails the same way again",
    errors.EXIT_DIVERGED: "the same checkpoint at the same learning rate diverges again",
    errors.EXIT_STOPPED: "a worker was stopped by a signal, which is a request, not a failure",
}
# A worker that lost its port to another process before binding it fails
# through no fault of its own: the group starts again on new ports, this many
# times at most, without counting against max_restarts.
_PORT_RETRIES = 2
_POLL_SECONDS = 0.05
_TAIL_LINES = 50  # of each worker's stderr, kept to recognise a lost port
_PR_SET_PDEATHSIG = 1


@dataclasses.dataclass(frozen=True)
class Exit:
    """How one worker ended, and when (time.monotonic())."""

    rank: int
    code: int
    at: float

    @property
    def name(self) -> str:
        return task_name(self.rank)


def task_name(rank: int) -> str:
    """The name main itself uses for the task: TF_CONFIG's type and index."""
    return f"worker:{rank}"


def prefix(rank: int) -> str:
    """What each of the worker's output lines starts with."""
    return f"[{task_name(rank)}] "


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the launcher's own argv, tf_mgpu.main's flags): the first `--` divides them."""
    argv = list(argv)
    if SEPARATOR not in argv:
        return argv, []
    at = argv.index(SEPARATOR)
    return argv[:at], argv[at + 1 :]


def worker_command(
    main_args: Sequence[str], *, restart: bool, program: Sequence[str] = MAIN
) -> list[str]:
    """The command every worker runs. A restart ends with --noclean: a run started with
    --clean (or a flagfile holding it) must not delete the checkpoints it resumes from."""
    return [*program, *main_args, *(["--noclean"] if restart else [])]


def worker_environment(
    spec: dict,
    rank: int,
    base: Mapping[str, str] = os.environ,
    private_network: bool = False,
    devices: list[str] | None = None,
) -> dict[str, str]:
    """`base` with worker `rank`'s TF_CONFIG, and its own GPUs `devices` (see
    tf_mgpu.cluster.gpus). Python's output is unbuffered, so that each line shows when it
    is written, not when a pipe's buffer fills. A worker in a private network namespace
    is told so (netns.ENV), to name it when a download fails."""
    env = local.environment(local.tf_config(spec, "worker", rank), base)
    env.update(gpus.environment(devices, base))
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(netns.ENV, None)
    if private_network:
        env[netns.ENV] = "1"
    return env


def exit_code(returncode: int) -> int:
    """A process killed by signal N exits 128 + N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def describe(code: int) -> str:
    """'exit 137 (killed by SIGKILL)', 'exit 6 (lost a peer)'."""
    if code > 128:
        with contextlib.suppress(ValueError):
            return f"exit {code} (killed by {signal.Signals(code - 128).name})"
    meaning = errors.BRIEF.get(code)
    return f"exit {code} ({meaning})" if meaning else f"exit {code}"


def first_failure(exits: Sequence[Exit]) -> Exit | None:
    """The earliest non-zero exit: the cause; the others' failures usually follow from it.

    Exits are seen every `_POLL_SECONDS`; of two seen at the same time, a lost
    peer (exit 6) is the consequence of the other, never its cause.
    """
    failures = [e for e in exits if e.code != 0]
    if not failures:
        return None
    return min(failures, key=lambda e: (e.at, e.code == errors.EXIT_PEER_LOST))


def forward_lines(
    stream: BinaryIO,
    sink: TextIO,
    line_prefix: str,
    lock: threading.Lock,
    tail: collections.deque | None = None,
) -> None:
    """Copies `stream` to `sink` until it ends, each line after `line_prefix`.

    Whole lines only, under `lock`, so that workers' lines never mix. A sink
    that is gone (a closed pipe) does not stop the copy: a worker whose output
    nobody drains would block on its next write.
    """
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\r\n")
        if tail is not None:
            tail.append(line)
        with lock, contextlib.suppress(OSError, ValueError):
            sink.write(f"{line_prefix}{line}\n")
            sink.flush()


class Worker:
    """One worker process (main's supervisor and its trainer), in a session of its own.

    Its own session keeps a terminal's Ctrl-C from reaching it directly: the
    launcher passes signals on, once. It dies with the launcher, even when the
    launcher is killed (PR_SET_PDEATHSIG, on Linux), and its trainer dies with it.
    """

    def __init__(self, rank: int, command: Sequence[str], env: Mapping[str, str]):
        self.rank = rank
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.process = subprocess.Popen(
            list(command),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
        )
        self._threads: list[threading.Thread] = []

    @property
    def name(self) -> str:
        return task_name(self.rank)

    def copy_output(self, out: TextIO, err: TextIO, lock: threading.Lock) -> None:
        """Starts copying its stdout to `out` and its stderr to `err`, line by line."""
        streams = ((self.process.stdout, out, None), (self.process.stderr, err, self.stderr_tail))
        for stream, sink, tail in streams:
            thread = threading.Thread(
                target=forward_lines,
                args=(stream, sink, prefix(self.rank), lock, tail),
                name=f"{self.name} output",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def signal(self, number: int) -> None:
        """To the worker's own process, which passes SIGTERM on to its trainer."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(number)

    def kill(self) -> None:
        """SIGKILL to every process of its session."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self, timeout: float = 5.0) -> None:
        """After its exit: the last lines of output are copied, the pipes closed."""
        for thread in self._threads:
            thread.join(timeout)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()

    def lost_its_port(self, code: int) -> bool:
        finished = local.Finished(self.name, code, "", "\n".join(self.stderr_tail), 0.0)
        return local.lost_a_port(finished)


@functools.cache
def _prctl():
    """libc's prctl, loaded once in the launcher: a forked child only calls it."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: a killed launcher leaves its workers running


def _die_with(parent: int):
    prctl = _prctl()

    def in_child() -> None:
        # Runs between fork and exec. The launcher starts a group's processes
        # before any of their output threads, so no other thread can hold a
        # lock this needs.
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the launcher died before prctl
            os._exit(errors.EXIT_BUG)

    return in_child


class _Signals:
    """Records SIGINT and SIGTERM while installed; the launcher acts on them in its loop."""

    def __init__(self):
        self.received: list[str] = []
        self._previous = {}

    def __enter__(self):
        for number in (signal.SIGINT, signal.SIGTERM):
            self._previous[number] = signal.signal(number, self._record)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _record(self, number: int, frame) -> None:
        del frame
        self.received.append(signal.Signals(number).name)


@dataclasses.dataclass
class Launcher:
    """Starts, watches and restarts the group; `run` returns the exit code to use.

    `workers` is the size of the group's next start: at first the most it has
    (`max_workers`), one fewer after each restarted failure down to
    `min_workers` (None: `workers`; the group never shrinks), and without the GPUs of
    the worker that failed. `program` is the
    command before main's flags; tests put stand-ins there.
    `private_network` moves this whole process (the thread that calls `run`, where
    others already run) into a network namespace of its own, for good: the command
    line's default, but no library call's.
    """

    main_args: Sequence[str]
    workers: int
    min_workers: int | None = None
    max_restarts: int = 0
    grace: float = 10.0
    program: Sequence[str] = MAIN
    out: TextIO | None = None  # default: sys.stdout at run time
    err: TextIO | None = None  # default: sys.stderr at run time
    private_network: bool = False

    def __post_init__(self):
        self.out = self.out or sys.stdout
        self.err = self.err or sys.stderr
        self._lock = threading.Lock()
        self.max_workers = self.workers
        self.min_workers = self.workers if self.min_workers is None else self.min_workers
        if not 1 <= self.min_workers <= self.workers:
            raise ValueError(f"min_workers={self.min_workers} is not in 1..{self.workers}")
        if self.min_workers < self.workers:
            # First: main's own flags (a flagfile's included) may set another value.
            self.main_args = [f"--{elastic.BATCH_FLAG}={self.workers}", *self.main_args]
        self._network = netns.off("--noprivate_network")
        self._shares: list[list[str]] | None = None  # each worker's own GPUs (see `gpus`)

    def run(self) -> int:
        if self.private_network:  # before any worker or thread starts: they inherit it
            self._network = netns.enter()
            if not self._network.private:  # open ports only where the user accepts them
                return self._refuse(self._network.refusal())
        self._say(self._network.line())
        found = gpus.visible()
        try:
            self._shares = gpus.shares(found, self.workers)
        except errors.UserError as e:
            return self._refuse(str(e))
        unused = gpus.unused_line(found, self._shares)
        if unused:
            self._say(unused)
        restarts, port_retries = 0, 0
        with _Signals() as signals:
            while True:
                exits, lost_port = self._run_group(signals, restart=restarts + port_retries > 0)
                failure = first_failure(exits)
                if failure is None:
                    return errors.EXIT_OK
                cause = f"{failure.name} {describe(failure.code)}"
                if signals.received:
                    self._say(
                        f"{signals.received[0]}: the workers stopped ({cause}); rerun the same "
                        f"command to resume"
                    )
                    return failure.code
                if lost_port and port_retries < _PORT_RETRIES:
                    port_retries += 1
                    self._say(f"{cause}: another process took its port; starting on new ports")
                    continue
                why_not = NOT_RESTARTED.get(failure.code)
                if why_not is None and restarts < self.max_restarts:
                    restarts += 1
                    lost = self._shrink(failure)
                    self._say(
                        f"restart {restarts}/{self.max_restarts} after {cause}{lost}: starting "
                        f"{self.workers} workers on new ports, to resume from the last checkpoint"
                    )
                    continue
                if why_not is None:
                    why_not = f"no restarts left (--max_restarts={self.max_restarts})"
                self._say(f"{cause}; not restarted: {why_not}")
                return failure.code

    def _shrink(self, failure: Exit) -> str:
        """With MIN:MAX, sizes the next start without the worker that failed first (not
        below MIN), and without its GPUs; returns what the restart line says about it."""
        if self.min_workers == self.max_workers:
            return ""
        spec = f"--workers={self.min_workers}:{self.max_workers}"
        if self.workers == self.min_workers:
            return f" ({spec}: at the minimum, the group restarts whole)"
        self.workers = elastic.next_size(self.workers, self.min_workers)
        if self._shares is None:
            return f", taken as lost ({spec})"
        lost = self._shares.pop(failure.rank)
        return f", taken as lost with its GPUs {','.join(lost)} ({spec})"

    def _refuse(self, line: str) -> int:
        """Starts nothing: one line, exit 3."""
        print(f"tf_mgpu: error: {line}", file=self.err, flush=True)
        return errors.EXIT_USER_ERROR

    def _run_group(self, signals: _Signals, restart: bool) -> tuple[list[Exit], bool]:
        """Starts every worker, waits for all of them; returns their exits and whether a
        failed one lost its port."""
        spec = local.cluster_spec(self.workers)
        command = worker_command(self.main_args, restart=restart, program=self.program)
        group: list[Worker] = []
        try:
            for rank in range(self.workers):
                devices = None if self._shares is None else self._shares[rank]
                env = worker_environment(
                    spec, rank, private_network=self._network.private, devices=devices
                )
                group.append(Worker(rank, command, env))
            for worker in group:  # only now: no thread runs while the workers fork
                worker.copy_output(self.out, self.err, self._lock)
            self._say(
                "started "
                + ", ".join(
                    f"{w.name} (pid {w.process.pid}, {spec['worker'][w.rank]}{self._gpus_of(w)})"
                    for w in group
                )
            )
            exits = self._wait(group, signals)
        finally:
            for worker in group:
                if worker.process.poll() is None:
                    worker.kill()
                    worker.process.wait()
            for worker in group:
                worker.close()
        codes = {e.rank: e.code for e in exits}
        lost_port = any(w.lost_its_port(codes[w.rank]) for w in group)
        return exits, lost_port

    def _wait(self, group: list[Worker], signals: _Signals) -> list[Exit]:
        """Until every worker exits: passes signals on, and ends the others after a failure.

        A first signal asks every worker to save and stop; a second kills them.
        A failure gives the others `grace` seconds to exit on their own, then
        SIGTERM, then after `grace` seconds more SIGKILL.
        """
        exits: dict[int, Exit] = {}
        failed_at: float | None = None
        forwarded, terminated, killed = 0, False, False
        while len(exits) < len(group):
            now = time.monotonic()
            for worker in group:
                if worker.rank in exits or worker.process.poll() is None:
                    continue
                done = Exit(worker.rank, exit_code(worker.process.returncode), now)
                exits[worker.rank] = done
                if done.code != 0 and failed_at is None:
                    failed_at = now
                    if len(exits) < len(group) and not signals.received:
                        self._say(
                            f"{done.name} {describe(done.code)}; the others have "
                            f"{self.grace:g} s to stop on their own"
                        )
            running = [w for w in group if w.rank not in exits]
            if len(signals.received) > forwarded:
                forwarded = len(signals.received)
                if forwarded == 1:
                    self._stop(running, f"{signals.received[0]}: ", "each saves and exits")
                    terminated = True
                else:
                    self._kill(running, f"{signals.received[-1]} again: ")
                    killed = True
            elif failed_at is not None and not killed:
                if not terminated and now >= failed_at + self.grace:
                    self._stop(running, f"still running {self.grace:g} s after the failure: ")
                    terminated = True
                elif now >= failed_at + 2 * self.grace:
                    self._kill(running, f"still running {2 * self.grace:g} s after the failure: ")
                    killed = True
            time.sleep(_POLL_SECONDS)
        return sorted(exits.values(), key=lambda e: e.at)

    def _stop(self, running: list[Worker], why: str, then: str = "") -> None:
        if running:
            self._say(f"{why}SIGTERM to {_names(running)}" + (f": {then}" if then else ""))
        for worker in running:
            worker.signal(signal.SIGTERM)

    def _kill(self, running: list[Worker], why: str) -> None:
        if running:
            self._say(f"{why}SIGKILL to {_names(running)}")
        for worker in running:
            worker.kill()

    def _gpus_of(self, worker: Worker) -> str:
        return "" if self._shares is None else f", GPUs {','.join(self._shares[worker.rank])}"

    def _say(self, text: str) -> None:
        with self._lock:
            print(f"tf_mgpu launch: {text}", file=self.err, flush=True)


def _names(workers: Sequence[Worker]) -> str:
    return ", ".join(w.name for w in workers)
