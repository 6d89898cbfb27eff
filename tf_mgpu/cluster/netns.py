"""A private network namespace holding only loopback, for the local launcher's workers.

TensorFlow's gRPC server, one per worker, binds every interface (`0.0.0.0` is
hard-coded), has no authentication and runs the graphs it is sent, file reads
and writes included; TensorFlow's security notes allow it on trusted networks
only. The launcher's workers talk to each other over loopback only, so before it
starts any of them the launcher moves itself into a network namespace of its own,
with `lo` up and no other interface. Its workers inherit that one namespace: they
reach each other, and nothing outside it reaches them, neither another host nor
another process of this machine. They cannot reach out either (no downloads).

`enter` tries `unshare(CLONE_NEWNET)`, which needs CAP_SYS_ADMIN (root), then
`CLONE_NEWUSER | CLONE_NEWNET`, which any user may, where the kernel allows user
namespaces; it says which held, or why neither did, and changes nothing when
both are refused. The launcher then starts no worker, unless the user accepts open
ports with --noprivate_network.

Threads: a namespace belongs to a thread. In a process that already runs other
threads, CLONE_NEWNET moves the calling thread only, and what it starts
afterwards: the launcher forks its workers from the thread that entered, so they
still share it. CLONE_NEWUSER needs a process of one thread (EINVAL otherwise).
The launcher enters first thing in `run`, before it starts any thread, and it
imports no TensorFlow, so from `python -m tf_mgpu.launch` it has one thread.
"""

import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = "16sh22x"  # struct ifreq: the interface's name, then ifr_flags in a 24-byte union

# What the workers learn: a worker that cannot download (MNIST on first use) says why.
ENV = "TF_MGPU_PRIVATE_NETWORK"
DOCS = "docs/multi-worker.md"


@dataclasses.dataclass(frozen=True)
class Network:
    """Where the workers' ports can be reached from: `private`, or not and `why` not."""

    private: bool
    why: str = ""

    def line(self) -> str:
        """The launcher's line about it, printed before it starts the workers."""
        if self.private:
            return (
                "workers' ports: reachable by this launcher's workers only (a private network "
                "namespace, loopback only)"
            )
        return f"workers' ports: reachable from other hosts ({self.why}); see {DOCS}"

    def refusal(self) -> str:
        """The launcher's one line when it cannot make the namespace and the user did not
        accept open ports (--noprivate_network)."""
        return (
            f"{self.why}, so the workers' ports (TensorFlow's gRPC servers: every interface, "
            f"no authentication) would be reachable from other hosts; pass --noprivate_network "
            f"to run them so on a network you trust (see {DOCS})"
        )


def off(why: str) -> Network:
    """No namespace, because `why` (a flag, say)."""
    return Network(private=False, why=why)


def enter() -> Network:
    """Moves the calling thread into a new network namespace with `lo` up, where the
    kernel allows; else leaves it where it was. Says which."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        unshare, setns = libc.unshare, libc.setns
    except (OSError, AttributeError):
        return off("no unshare() in this C library: not Linux")
    refusals = []
    for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET):
        uid, gid = os.geteuid(), os.getegid()
        with _this_namespace() as before:
            if unshare(flags) != 0:
                refusals.append(_refusal(flags, ctypes.get_errno()))
                continue
            if flags & CLONE_NEWUSER:
                _same_ids(uid, gid)
            try:
                _loopback_up()
            except OSError as e:
                # Root goes back to where it was. A user namespace cannot be left; but
                # in a namespace of its own, a process may always bring its `lo` up.
                if before is None or flags & CLONE_NEWUSER or setns(before, CLONE_NEWNET):
                    raise
                refusals.append(f"lo stayed down, {_name(e.errno)}")
                continue
        return Network(private=True)
    return off("the kernel refused a private network namespace: " + "; ".join(refusals))


@contextlib.contextmanager
def _this_namespace():
    """A descriptor of the calling thread's network namespace, or None without /proc."""
    try:
        fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _refusal(flags: int, number: int) -> str:
    text = _name(number)
    if flags & CLONE_NEWUSER:
        text, threads = f"with a user namespace, {text}", 1
        with contextlib.suppress(OSError):
            threads = len(os.listdir("/proc/self/task"))
        if number == errno.EINVAL and threads > 1:
            text += f" (this process runs {threads} threads; a user namespace needs one)"
    return text


def _name(number: int | None) -> str:
    """'EPERM (Operation not permitted)'."""
    if number is None:
        return "an unknown error"
    return f"{errno.errorcode.get(number, str(number))} ({os.strerror(number)})"


def _same_ids(uid: int, gid: int) -> None:
    """Inside a new user namespace, the user and group of outside. Without the map, the
    workers would see themselves as 65534 (nobody); their access to files, which the
    kernel checks with their real ids, is the same either way, so a map the kernel
    refuses (root without CAP_SETFCAP) is left unwritten."""
    for name, text in (
        ("setgroups", "deny"),  # before gid_map, as the kernel requires of non-root
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _loopback_up() -> None:
    """`ip link set lo up`, by ioctl: a new namespace's `lo` is down, and without it
    127.0.0.1 is not even bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))
