"""SIGTERM and SIGINT: at once while nothing is at stake, else saved at the next call's end.

Orchestrators stop jobs with SIGTERM (Kubernetes pod deletion, `scancel`,
spot-instance preemption notices) and people with Ctrl-C. Two windows:

- Nothing to save (before training starts: importing, joining, loading, building;
  and while the calls compile, which changes no variable): the signal ends the
  process at once, with its line and exit 75, even while TensorFlow holds the main
  thread in C++ for minutes (an XLA compile). Python runs a signal handler only
  between bytecodes of the main thread, so the signal's byte also reaches a small
  thread through `signal.set_wakeup_fd`, which ends the process from there.
- Training and evaluating: the handler only records the signal. Calls are sized
  to last about `--loop_seconds` (`tf_mgpu.engine.step.pace`), and after each the
  workers agree whether any of them was asked to stop (`tf_mgpu.engine.distribute.agreement`);
  then every worker saves the same checkpoint and ends with `errors.Stopped`
  (exit 75). TensorFlow's PreemptionCheckpointHandler does the same through its
  coordination service; this is the same idea on the collective the loop
  already runs, and it knows our call boundaries.

Writes that must not be cut in half (the resume's records, --clean) run inside
`deferred()`: a signal then waits for the write to finish.

TensorFlow installs its own SIGTERM handler while MultiWorkerMirroredStrategy
starts (it logs "SIGTERM caught" and carries on), so `start_training`
installs ours again afterwards.
"""

import contextlib
import os
import signal
import sys
import threading

from tf_mgpu import errors
from tf_mgpu.errors import Stopped

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stop:
    """Records SIGTERM/SIGINT; ends the run at once while nothing is at stake."""

    def __init__(self):
        self.requested: str | None = None
        self._at_stake = False  # True while training: a signal waits for the call's end
        self._deferred = 0  # depth of `deferred()` writes
        self._phase = "before training started"
        self._exiting = threading.Lock()

    def install(self) -> None:
        """Our handlers, and the process's wakeup thread; call from the main thread."""
        for number in _SIGNALS:
            signal.signal(number, self._handle)
        _watch_for(self)

    def start_training(self) -> None:
        """Call after the strategy exists: ours again, after TensorFlow's own handler."""
        self.install()
        if self.requested:  # arrived while TensorFlow's handler was installed
            self._exit_now()

    def compiling(self) -> None:
        """The calls compile now: nothing changes, so a signal ends the run at once."""
        self._at_stake, self._phase = False, "while compiling"
        if self.requested:
            self._exit_now()

    def training(self) -> None:
        """From now on a signal waits for the end of the current call, which saves."""
        self._at_stake = True

    @contextlib.contextmanager
    def deferred(self):
        """A write that must finish: a signal meanwhile ends the run right after it."""
        self._deferred += 1
        try:
            yield
        finally:
            self._deferred -= 1
        if self.requested and not self._at_stake and not self._deferred:
            self._exit_now()

    def _handle(self, number: int, frame) -> None:
        del frame
        self.requested = self.requested or signal.Signals(number).name
        if not self._at_stake and not self._deferred:
            self._exit_now()

    def _woken(self, numbers: list[int]) -> None:
        """From the wakeup thread: signals that arrived, whatever the main thread is doing."""
        if numbers and not self._at_stake and not self._deferred:
            self.requested = self.requested or signal.Signals(numbers[0]).name
            self._exit_now()

    def _exit_now(self) -> None:
        # Exit here rather than raise: the signal may land anywhere, and code it
        # lands in may catch the exception and raise another (TensorFlow's import
        # turns it into "TypeError: unsupported callable", with a traceback).
        if not self._exiting.acquire(blocking=False):
            return  # the other path is exiting
        what = f"{self.requested} {self._phase}; nothing to save"
        print(errors.line(Stopped(what)), file=sys.stderr, flush=True)
        os._exit(errors.EXIT_STOPPED)


# One wakeup pipe and thread per process, acting for the Stop installed last (a process that
# trains several times, as tests and notebooks do, keeps one of each).
_watched: list[Stop] = []


def _watch_for(stop: Stop) -> None:
    if not _watched:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        threading.Thread(
            target=_watch, args=(read_end,), name="tf_mgpu signals", daemon=True
        ).start()
        _watched.append(stop)
    _watched[0] = stop


def _watch(read_end: int) -> None:
    while True:
        try:
            data = os.read(read_end, 16)
        except OSError:
            return
        if not data:
            return
        _watched[0]._woken([n for n in data if n in _SIGNALS])
