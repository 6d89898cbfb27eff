"""What a run sees of its start (argv, folder, environment, session, stdin, whether TensorFlow
is already loaded), printed as JSON; then it exits as `--exit=` says: with a code, by raising,
after burning CPU, or never (until killed). Run by tests/test_forkserver.py, forked and not."""

import json
import os
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


def _null() -> tuple[int, int]:
    null = os.stat(os.devnull)
    return null.st_rdev, null.st_ino


if __name__ == "__main__":
    _probe()
