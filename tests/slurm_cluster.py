"""A real one-node Slurm cluster on this machine, in a temporary folder, for tests and by hand.

  python -m tests.slurm_cluster DIR [SECONDS]   # up for SECONDS (default 600), then stopped

`SlurmCluster` starts munged (its own key and socket), slurmctld and slurmd
in the foreground as child processes, each with its own log in the folder,
with the node named `hostname -s` at 127.0.0.1 and free ports. It waits
(bounded) until `sinfo` reports the node idle, and on exit cancels any job
left and stops every process it started, by PID.

slurmd starts each job step's slurmstepd as a daemon (a double fork), which
would make it a child of init, out of reach, and a zombie on machines whose
init does not reap. So while the cluster is up this process is a child
subreaper (Linux): the orphaned slurmstepd processes become its children,
and `stop` ends and reaps them too. Debian's packages:
`apt-get install --no-install-recommends slurmctld slurmd slurm-client munge`.
"""

import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from tf_mgpu.cluster import local

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sinfo", "squeue", "scancel")
_PR_SET_CHILD_SUBREAPER = 36
_ORPHANS = ("slurmstepd", "srun")
UP_TIMEOUT = 30.0  # seconds: about 1.5 s on a 2-core machine
STOP_TIMEOUT = 10.0


def missing_binaries() -> list[str]:
    """The Slurm and munge programs this machine lacks (PATH plus the sbin folders)."""
    return [name for name in BINARIES if _which(name) is None]


def _which(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    return shutil.which(name, path=path)


_CONF = """\
ClusterName=tfmgpu
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """munged, slurmctld and slurmd for one node of `cpus` CPUs, all files under `root`.

    Use as a context manager; `env` is the environment for srun, sinfo and
    friends (SLURM_CONF names this cluster's configuration).
    """

    def __init__(self, root: pathlib.Path, cpus: int = 2):
        self.root = pathlib.Path(root).resolve()
        self.node = socket.gethostname().split(".")[0]  # what `hostname -s` prints
        self.cpus = cpus
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self._daemons: dict[str, subprocess.Popen] = {}

    def __enter__(self) -> "SlurmCluster":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def run(self, command: Sequence[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
        """Runs a Slurm client command (srun, sinfo, ...) against this cluster."""
        return subprocess.run(
            list(command), env=self.env, capture_output=True, text=True, timeout=timeout, **kwargs
        )

    def _start(self) -> None:
        _set_subreaper(True)
        missing = missing_binaries()
        if missing:
            raise RuntimeError(f"Slurm is not installed here (no {', '.join(missing)})")
        try:
            socket.gethostbyname(self.node)
        except OSError:
            raise RuntimeError(
                f"this machine's name {self.node!r} does not resolve, and Slurm tasks reach "
                f"each other by node name: add '127.0.0.1 {self.node}' to /etc/hosts"
            ) from None
        for folder in (self.root, self.root / "state", self.root / "spool"):
            folder.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)  # munged refuses a key or socket in a folder others can write
        ctld_port, slurmd_port = local.free_ports(2)
        self.conf.write_text(
            _CONF.format(
                node=self.node,
                root=self.root,
                cpus=self.cpus,
                ctld_port=ctld_port,
                slurmd_port=slurmd_port,
            )
        )
        key = self.root / "munge.key"
        key.unlink(missing_ok=True)  # a folder used before: mungekey will not overwrite a key
        subprocess.run(
            [_which("mungekey"), "--create", f"--keyfile={key}"],
            check=True,
            capture_output=True,
            timeout=STOP_TIMEOUT,
        )
        self._spawn(
            "munged",
            "--foreground",
            "--force",  # as root, and in a folder munged did not create
            f"--socket={self.root / 'munge.socket'}",
            f"--key-file={key}",
            f"--pid-file={self.root / 'munged.pid'}",
            f"--seed-file={self.root / 'munged.seed'}",
            f"--log-file={self.root / 'munged.log'}",
        )
        self._wait(lambda: (self.root / "munge.socket").exists(), "munged's socket")
        self._spawn("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._spawn("slurmd", "-D", "-N", self.node, "-f", str(self.conf))
        self._wait(self._node_idle, f"node {self.node} to be idle in sinfo")

    def _spawn(self, name: str, *args: str) -> None:
        with open(self.root / f"{name}.out", "w") as out:
            self._daemons[name] = subprocess.Popen(
                [_which(name), *args],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def _node_idle(self) -> bool:
        try:
            state = self.run(["sinfo", "--noheader", "--format=%T"], timeout=5).stdout
        except subprocess.TimeoutExpired:
            return False
        return state.strip() == "idle"

    def _wait(self, condition, what: str) -> None:
        deadline = time.monotonic() + UP_TIMEOUT
        while not condition():
            for name, process in self._daemons.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited {process.returncode}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"waited {UP_TIMEOUT:g} s for {what}:\n{self.logs()}")
            time.sleep(0.1)

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon's output, for failure messages."""
        parts = []
        for path in sorted(self.root.glob("*.out")) + sorted(self.root.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancels what still runs, then stops the daemons (newest first) and the steps' processes.

        Call it after waiting for every srun you started yourself: any other
        srun or slurmstepd child of this process is taken for an orphan and reaped.
        """
        if "slurmctld" in self._daemons and self._daemons["slurmctld"].poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self.run(["scancel", "--full", f"--user={os.getuid()}"], timeout=STOP_TIMEOUT)
                self._wait_no_jobs()
        # Each job step's slurmstepd, and a fork of each srun, are orphans adopted by us.
        daemons = {process.pid for process in self._daemons.values()}
        orphans = [p for p in _children(os.getpid()) if p not in daemons and _name(p) in _ORPHANS]
        leftovers = [p for pid in orphans if _name(pid) == "slurmstepd" for p in _descendants(pid)]
        for name in reversed(list(self._daemons)):
            _end(self._daemons.pop(name))
        for pid in leftovers + [p for p in orphans if _name(p) == "slurmstepd"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in orphans:
            _reap(pid)
        _set_subreaper(False)

    def _wait_no_jobs(self) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            if not self.run(["squeue", "--noheader"], timeout=5).stdout.strip():
                return
            time.sleep(0.1)


def _end(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT: the daemons save state and exit on SIGTERM."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def _reap(pid: int) -> None:
    """Waits for our child `pid`, STOP_TIMEOUT seconds at most, then kills it."""
    deadline = time.monotonic() + STOP_TIMEOUT
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.05)


def _set_subreaper(on: bool) -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux: orphans go to init
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on))


def _parents() -> dict[int, int]:
    """PID -> parent PID of every process, read from /proc (Linux)."""
    parents = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    return parents


def _children(pid: int) -> list[int]:
    return [child for child, parent in _parents().items() if parent == pid]


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`."""
    parents = _parents()
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child in (c for c, p in parents.items() if p == parent):
            found.append(child)
            todo.append(child)
    return found


def _name(pid: int) -> str:
    with contextlib.suppress(OSError):
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    return ""


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    seconds = float(argv[2]) if len(argv) == 3 else 600.0
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the daemons on SIGTERM too
    with SlurmCluster(pathlib.Path(argv[1])) as cluster:
        print(f"export SLURM_CONF={cluster.conf}  # up for {seconds:g} s; Ctrl-C stops it")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
