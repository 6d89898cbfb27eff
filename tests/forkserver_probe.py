"""What a run sees of its start (argv, folder, environment, session, stdin, open files, signal
dispositions and mask, whether TensorFlow is already loaded), printed as JSON; then it exits as
`--exit=` says: with a code, by raising, after burning CPU, or never (until killed). Run by
tests/test_forkserver.py, forked and not."""

import json
import os
import signal
import sys
import time


def _probe() -> None:
    how = sys.argv[1].split("=", 1)[1]
    stdin = os.fstat(0)
    print(
        json.dumps(
            {
                "argv": sys.argv,
                "cwd": os.getcwd(),
                "path0": sys.path[0],
                "setting": os.environ["PROBE_SETTING"],
                "environment": {k: v for k, v in os.environ.items() if k != "PROBE_SETTING"},
                "open_files": sorted(os.listdir("/proc/self/fd"), key=int),
                "signals": _signals(),
                "own_session": os.getsid(0) == os.getpid(),
                "stdin_is_null": (stdin.st_rdev, stdin.st_ino) == _null(),
                "tensorflow_loaded": "tensorflow" in sys.modules,  # forked: from the server
                "main": __name__,
            }
        ),
        flush=True,
    )
    if how == "raise":
        raise RuntimeError("the user's own error")
    if how == "busy":
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass
    if how == "never":
        time.sleep(600)
    sys.exit(int(how) if how.isdigit() else 0)


def _signals() -> dict:
    """The kernel's view (blocked, ignored, caught) and Python's handlers, of signals 1-31 (glibc
    catches 32 and 33 for its threads once a process has started one; a forked run has)."""
    with open("/proc/self/status") as status:
        masks = dict(line.split(":\t") for line in status if line.startswith("Sig"))
    masks = {
        k: f"{int(v, 16) & 0x7FFFFFFF:08x}"
        for k, v in masks.items()
        if k in ("SigBlk", "SigIgn", "SigCgt")
    }
    handlers = {s.name: repr(signal.getsignal(s)) for s in signal.valid_signals() if s < 32}
    return {**masks, **{k: v for k, v in handlers.items() if v != "<Handlers.SIG_DFL: 0>"}}


def _null() -> tuple[int, int]:
    null = os.stat(os.devnull)
    return null.st_rdev, null.st_ino


if __name__ == "__main__":
    _probe()
