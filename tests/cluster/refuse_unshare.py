"""Runs a command in a process where the kernel refuses unshare (EPERM), as it does in many
containers (a seccomp filter, the one tests/cluster/test_netns.py installs):

    python -m tests.cluster.refuse_unshare python -m tf_mgpu.launch --workers=2 -- ...

docs/multi-worker.md shows the launcher's first line there."""

import os
import sys

from tests.cluster.test_netns import refusing_unshare

if __name__ == "__main__":
    refusing_unshare()()
    os.execvp(sys.argv[1], sys.argv[1:])
