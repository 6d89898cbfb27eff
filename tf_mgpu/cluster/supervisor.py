"""The parent of a multi-worker task: it bounds the waits the trainer cannot bound itself.

Each task of a TF_CONFIG cluster runs as two processes: this small parent
(no TensorFlow) and the trainer, its child. The parent exists because
MultiWorkerMirroredStrategy's constructor waits for every peer while holding
the GIL and ignoring SIGTERM: no Python timer or signal handler inside the
trainer runs until it returns. From outside, the parent can:

- end a wait for peers that never start after `--startup_timeout`, naming
  the addresses that do not answer, with exit code 5 (not a SIGKILL's 137);
- stop the trainer on SIGTERM or Ctrl-C while it waits for peers (exit 75),
  and pass the signal on once training runs, where the trainer saves first;
- end a trainer that has made no progress for `--peer_timeout` seconds beyond
  the grace its last word granted (a frozen peer, a dead network), with exit
  code 6;
- return the trainer's own exit code otherwise, at once.

The trainer reports its progress as words on a pipe (`notify`): 'joining'
before it waits for peers, 'joined' after (then it loads, builds and resumes,
within --startup_timeout), 'compiling' while it compiles and 'finishing' once no
collective is left (local work: no deadline), 'warming' before what was not
measured yet (--startup_timeout again), 'alive G' before every other call,
where G is the seconds beyond --peer_timeout that the call may take, from what
it measured (`tf_mgpu.engine.faults.liveness`), and 'saving G' / 'ending G'
before a checkpoint save and the end of the run's collectives, bounded alike
('saving' alone: the first save, not measured yet, has --startup_timeout). It dies
with its parent (PR_SET_PDEATHSIG), so no trainer is ever left behind.
"""

import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import time

from tf_mgpu import errors

_FD = "TF_MGPU_SUPERVISOR_FD"
_PARENT = "TF_MGPU_SUPERVISOR_PID"
_PR_SET_PDEATHSIG = 1


def is_child() -> bool:
    return _FD in os.environ


def notify(event: str) -> None:
    """Tells the parent, if there is one, how far the trainer got."""
    fd = os.environ.get(_FD)
    if fd is None:
        return
    with contextlib.suppress(OSError):  # the parent is gone; PR_SET_PDEATHSIG ends us
        os.write(int(fd), f"{event}\n".encode())


def bind_to_parent() -> None:
    """In the trainer: die when the parent dies, even by SIGKILL (Linux)."""
    if not is_child():
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the pipe still breaks when the parent dies
    if os.getppid() != int(os.environ[_PARENT]):  # the parent died before prctl
        os._exit(errors.EXIT_BUG)


def supervise(
    argv: list[str],
    *,
    task: str,
    addresses: tuple[str, ...],
    startup_timeout: float,
    peer_timeout: float,
) -> int:
    """Runs `python -m tf_mgpu.main argv[1:]` as the trainer; returns the exit code to use."""
    read_end, write_end = os.pipe()
    env = dict(os.environ, **{_FD: str(write_end), _PARENT: str(os.getpid())})
    received: list[str] = []

    def on_signal(number: int, frame) -> None:
        del frame
        received.append(signal.Signals(number).name)

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, on_signal)
    child = subprocess.Popen(
        [sys.executable, "-m", "tf_mgpu.main", *argv[1:]], env=env, pass_fds=(write_end,)
    )
    os.close(write_end)
    phase, deadline, forwarded, limit = "starting", None, 0, peer_timeout
    buffer = b""
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], 0.1)
            if ready:
                chunk = os.read(read_end, 4096)
                if not chunk:  # the trainer closed its end: it is exiting
                    return _exit_code(child.wait())
                buffer += chunk
                *events, buffer = buffer.split(b"\n")
                for event in (e.decode() for e in events):
                    phase, limit = _deadline(event, startup_timeout, peer_timeout)
                    deadline = None if limit is None else time.monotonic() + limit
            failure = None
            if len(received) > forwarded:
                forwarded = len(received)
                if phase == "joining":
                    failure = errors.Stopped(
                        f"{received[0]} while {task} waited for the other tasks; nothing to save"
                    )
                else:
                    child.send_signal(signal.SIGTERM)
            if failure is None and deadline is not None and time.monotonic() > deadline:
                if phase == "joining":  # probed while this task's own server still answers
                    failure = errors.PeersUnreachable(
                        _never_started(task, addresses, startup_timeout)
                    )
                elif phase in ("preparing", "first save"):
                    doing = (
                        "saving its first checkpoint"
                        if phase == "first save"
                        else "starting (loading, building, a first call)"
                    )
                    failure = errors.PeerLost(
                        f"{task} made no progress for {limit:g} s (--startup_timeout) while "
                        f"{doing}: a peer froze or failed; rerun the same command on every "
                        f"worker, or raise --startup_timeout if that takes longer"
                    )
                else:
                    doing = "its calls" if phase == "training" else f"{phase}"
                    failure = errors.PeerLost(
                        f"{task} made no progress for {limit:g} s (--peer_timeout "
                        f"{peer_timeout:g} s + {limit - peer_timeout:g} s for {doing}): a "
                        f"peer froze or the network failed; rerun the same command on every "
                        f"worker to resume from the last checkpoint"
                    )
            if failure is not None:
                _end(child)
                print(errors.line(failure), file=sys.stderr, flush=True)
                return failure.exit_code
    finally:
        os.close(read_end)
        if child.poll() is None:
            _end(child)


def _deadline(event: str, startup_timeout: float, peer_timeout: float):
    """(the phase, the seconds the next word may take: None for no limit) after `event`."""
    word, _, grace = event.partition(" ")
    if word == "joining":
        return "joining", startup_timeout
    if word in ("joined", "warming"):  # loading, building, resuming, first calls: a start
        return "preparing", startup_timeout
    if word in ("compiling", "finishing"):  # local work: no peer can hold it up
        return word, None
    phase = {"saving": "saving", "ending": "ending the run"}.get(word, "training")
    if phase == "saving" and not grace:  # the first save: not measured yet
        return "first save", startup_timeout
    try:
        extra = max(float(grace), 0.0) if grace else 0.0
    except ValueError:
        extra = 0.0
    return phase, peer_timeout + extra


def _end(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()


def _exit_code(returncode: int) -> int:
    """A trainer killed by signal N exits 128 + N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def _never_started(task: str, addresses: tuple[str, ...], seconds: float) -> str:
    silent = [address for address in addresses if not _answers(address)]
    missing = ", ".join(silent) if silent else "none refused a connection, but some never joined"
    return (
        f"{task} waited {seconds:g} s for the other tasks of TF_CONFIG; "
        f"not answering: {missing}. Start every task, check the addresses and ports, "
        f"or raise --startup_timeout"
    )


def _answers(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False
