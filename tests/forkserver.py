"""Starts `python -m tf_mgpu.<command>` runs without paying TensorFlow's import in each.

Most of the suite's time was its ~150 started processes, and 3.5 to 6.6 s of each was importing
TensorFlow and Keras (BUILD_NOTES.md, "Test layout"). A server process per pytest worker
imports both once, in the environment a run's command imports them in (TF_CPP_MIN_LOG_LEVEL=3
unless given), and forks a child per run. The child becomes the run: its folder, environment,
argv, stdin from /dev/null, stdout/stderr in the test's files, its own session if asked, the
signal dispositions an exec from the test's process would give it (whatever the server had); it
tells the server it is ready (or why it cannot start, raised in the test), then runs the
command's module as `__main__` as `python -m` does, and exits as that would. The server reaps
it and passes back its exit code and CPU time.

What a forked run does not have of a fresh one: its own import (TensorFlow's start-up lines
went to the server's stderr; the absl flags TensorFlow defines are already there), its own
hash seed (every run of one server shares the server's), its own process start time, and a
command line and parent of its own (/proc shows the server's). So a test of what happens while
TensorFlow loads, of its C++ logs (`--verbosity`), or one that compares runs that must differ
in those, starts a fresh `python -m` (`fresh=True` in tests/support.py; see `forkable`).
The server forks only while its threads are those of numpy's OpenBLAS pool, which OpenBLAS stops
around a fork itself (pthread_atfork); a thread TensorFlow's import started would make the run
start fresh (/proc/self/status counts them).
"""

import contextlib
import json
import os
import pathlib
import runpy
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

_MODULE_FLAG = "-m"
# Commands whose runs are forked: the rest (launch, slurm, bench, ...) start other processes.
_COMMANDS = ("tf_mgpu.main", "tf_mgpu.evaluate", "tf_mgpu.predict", "tests.zoo.one")
# Flags of runs that start fresh: TensorFlow's own logs (set before it loads), and a cluster
# resolver (Slurm, Kubernetes: the run supervises a trainer it execs).
_FRESH_FLAGS = ("--verbosity", "--v=", "-v", "--cluster_resolver")
# Read when Python starts or TensorFlow loads.
_READ_AT_START = ("PYTHON", "TF_CPP_", "TF_ENABLE_ONEDNN", "CUDA_", "KERAS_")
_EXEC = "exec"  # the server's answer when it cannot fork
_SAFE_THREADS = 1  # the server's threads that a fork may leave behind (set as it starts)

_server = None  # (its process, its socket, the environment it imported TensorFlow in)
# CPU seconds of the forked runs that have ended, which `resource.getrusage(RUSAGE_CHILDREN)`
# does not count (their parent is the server): tests/cpu_usage.py adds them.
cpu_seconds = 0.0


def forkable(command, env) -> bool:
    """Whether `command` is a run the server may fork: `python -m tf_mgpu.main|evaluate|predict`,
    not asking for TensorFlow's own logs, as one process (a multi-worker run's supervisor starts
    its trainer with a real exec anyway), with what Python and TensorFlow read as they start
    as the server had it."""
    if os.environ.get("TF_MGPU_TEST_FORK", "1") == "0":
        return False
    if len(command) < 3 or command[0] != sys.executable or command[1] != _MODULE_FLAG:
        return False
    if command[2] not in _COMMANDS or "TF_CONFIG" in env:
        return False
    if any(arg.startswith(_FRESH_FLAGS) for arg in command[3:]):
        return False
    run = _server_environment(env)
    server = _server[2] if _server is not None else _server_environment(os.environ)
    names = {k for k in {*run, *server} if k.startswith(_READ_AT_START)}
    return all(run.get(k) == server.get(k) for k in names)


def _server_environment(env) -> dict:
    """`env` as a run's command has it when TensorFlow loads (tf_mgpu.cli.quiet_tensorflow)."""
    env = {k: v for k, v in env.items() if k not in ("TF_CONFIG", "TF_XLA_FLAGS")}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def starter(fresh: bool):
    """What starts a test's process: `subprocess.Popen` if `fresh`, else `popen`."""
    return subprocess.Popen if fresh else popen


def popen(command, cwd, env, stdout, stderr, start_new_session=False):
    """A `subprocess.Popen` of `command`, or a `Forked` one from the server if `forkable`."""
    given = dict(
        cwd=cwd, env=env, stdout=stdout, stderr=stderr, start_new_session=start_new_session
    )
    if not forkable(command, env):
        return subprocess.Popen(command, **given)
    request = {
        "module": command[2],
        "args": list(command[3:]),
        "cwd": os.path.abspath(cwd or os.getcwd()),
        "env": dict(env),
        "stdout": os.path.abspath(stdout.name),
        "stderr": os.path.abspath(stderr.name),
        "session": start_new_session,
        "signals": _dispositions(),
    }
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(_started())
    connection.sendall(json.dumps(request).encode() + b"\n")
    forked = Forked(connection)
    if forked.pid is None:  # the server has a thread it did not have at its start: no fork
        return subprocess.Popen(command, **given)
    return forked


class Forked:
    """What the tests use of a `subprocess.Popen`: pid, poll, wait, returncode, send_signal."""

    def __init__(self, connection: socket.socket):
        self._connection = connection
        self._received = b""
        self.pid = None
        self.returncode = None
        answer = self._line(None)
        if answer.startswith("error "):
            self._connection.close()
            raise RuntimeError(f"a forked run could not start: {answer[len('error ') :]}")
        if answer == _EXEC:
            self._connection.close()
            return
        self.pid = int(answer)

    def _line(self, timeout):
        """The server's next line, or None if none came within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._received:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._connection], [], [], left)
            if not ready:
                return None
            chunk = self._connection.recv(4096)
            if not chunk:
                raise RuntimeError(
                    f"the fork server went away (pid {self.pid}): see {_server[1]}.err"
                )
            self._received += chunk
        line, self._received = self._received.split(b"\n", 1)
        return line.decode()

    def poll(self):
        if self.returncode is None:
            line = self._line(0)
            if line is not None:
                self._ended(line)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            line = self._line(timeout)
            if line is None:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            self._ended(line)
        return self.returncode

    def _ended(self, line: str) -> None:
        global cpu_seconds
        code, cpu = line.split()
        self.returncode = int(code)
        cpu_seconds += float(cpu)
        self._connection.close()

    def send_signal(self, number: int) -> None:
        """As `Popen.send_signal`: nothing once the run has ended."""
        self.poll()
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)


def _dispositions() -> dict:
    """The signals this process ignores and blocks, which an exec'd child inherits (a caught
    one is reset to its default by the exec)."""
    with open("/proc/self/status") as status:
        masks = dict(line.split(":\t") for line in status if line.startswith(("SigIgn", "SigBlk")))
    numbers = {k: int(v, 16) for k, v in masks.items()}
    return {
        kind: [s for s in signal.valid_signals() if numbers[key] >> (s - 1) & 1]
        for kind, key in (("ignored", "SigIgn"), ("blocked", "SigBlk"))
    }


def _start_signals_as_exec(signals: dict) -> None:
    """In the forked child: every signal as `python -m` started by the client has it. The exec
    keeps what the client ignores and blocks and resets the rest to the default; then Python's
    start makes SIGINT raise KeyboardInterrupt (unless ignored) and ignores SIGPIPE and SIGXFSZ.
    A background job's shell ignores SIGINT and SIGQUIT: so does its forked run then."""
    ignored = set(signals["ignored"])
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):  # glibc's own (32, 33)
            signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, signals["blocked"])


def _started() -> str:
    """The server's socket, starting the server the first time."""
    global _server
    if _server is None or _server[0].poll() is not None:
        folder = tempfile.mkdtemp(prefix="tf_mgpu_forkserver_")
        path = os.path.join(folder, "socket")
        env = _server_environment(os.environ)
        with open(path + ".err", "w") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.forkserver", path],
                cwd=pathlib.Path(__file__).resolve().parent.parent,
                env=env,
                stdin=subprocess.PIPE,  # the server ends when this process does
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 120
        while not os.path.exists(path):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fork server did not start: see {path}.err")
            time.sleep(0.05)
        _server = (process, path, env)
    return _server[1]


def _serve(path: str) -> dict:
    """Answers requests until stdin closes; returns a request only in a forked child."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    children = {}  # pid -> the connection that waits for its exit code
    while True:
        for key, _ in selector.select(timeout=0.02):
            if key.fileobj is sys.stdin:
                if not os.read(sys.stdin.fileno(), 4096):
                    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
                    os._exit(0)
                continue
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            try:
                request = json.loads(connection.makefile("r").readline())
            except (OSError, ValueError) as e:  # a client that went away
                print(f"forkserver: a request was lost: {e!r}", file=sys.stderr, flush=True)
                connection.close()
                continue
            if _threads() > _SAFE_THREADS:
                with contextlib.suppress(OSError):
                    connection.sendall(f"{_EXEC}\n".encode())
                connection.close()
                continue
            ready, told = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                os.close(ready)
                selector.close()
                listener.close()
                connection.close()
                for other in children.values():
                    other.close()
                return _set_up(request, told)
            os.close(told)
            with os.fdopen(ready, "rb") as reader:
                answer = reader.read().decode()  # "" once the child is set up
            children[pid] = connection
            with contextlib.suppress(OSError):
                connection.sendall(f"error {answer}\n".encode() if answer else f"{pid}\n".encode())
        while children:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = children.pop(pid, None)
            if connection is not None:
                code = os.waitstatus_to_exitcode(status)
                cpu = usage.ru_utime + usage.ru_stime
                with contextlib.suppress(OSError):
                    connection.sendall(f"{code} {cpu}\n".encode())
                connection.close()


def _threads() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


def _set_up(request: dict, told: int) -> dict:
    """In the forked child: its session, folder, environment and files as `request` asks.
    Closing `told` tells the server it is ready; a setup that fails writes why and exits."""
    try:
        if request["session"]:
            os.setsid()
        _start_signals_as_exec(request["signals"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        for fd, name in ((1, request["stdout"]), (2, request["stderr"])):
            opened = os.open(name, os.O_WRONLY | os.O_APPEND)
            os.dup2(opened, fd)
            os.close(opened)
    except OSError as e:
        os.write(told, repr(e).encode())
        os._exit(1)
    os.close(told)
    return request


def _become(request: dict) -> None:
    """Runs `python -m <module> <args>` in this forked, set-up child."""
    sys.path[0] = request["cwd"]
    sys.argv = [request["module"], *request["args"]]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    import numpy  # noqa: F401  (its OpenBLAS starts a thread per further core)

    _SAFE_THREADS = _threads()
    import keras  # noqa: F401
    import tensorflow  # noqa: F401
    from absl import app

    if _threads() > _SAFE_THREADS:
        print(
            f"forkserver: {_threads()} threads after TensorFlow's import, {_SAFE_THREADS} "
            "before: every run starts fresh",
            file=sys.stderr,
            flush=True,
        )

    # TensorFlow's import queues a callback for absl's app.run that lists the devices, which
    # reads TF_XLA_FLAGS for good. A run imports TensorFlow after app.run has started, so it
    # lists them later, once main has named the compile cache; a forked run must not list
    # them at its app.run instead.
    app._init_callbacks.clear()

    _become(_serve(sys.argv[1]))
