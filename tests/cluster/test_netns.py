"""The launcher's private network namespace: what its first line says is what holds.

Each case runs the launcher in a process of its own (it moves that whole
process into the namespace) over stand-in workers that bind `0.0.0.0` on the
port their TF_CONFIG gives them, as TensorFlow's gRPC server does, and connect
to every peer. While they wait, this process, outside, tries their ports on
127.0.0.1 and on an address of this machine that is not loopback. Four cases:
the namespace as root; the namespace through a user namespace (root without
CAP_SYS_ADMIN, as a user without privileges gets it); the kernel refusing
(a seccomp filter makes unshare fail with EPERM, as it does in many
containers); and --noprivate_network. No TensorFlow: about a second each.
The last test shows why the launcher enters before it starts any thread.
tests/test_launch.py trains real workers in the namespace.
"""

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import pathlib
import platform
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.cluster import netns

BOUND = 20  # seconds a stand-in waits at most

STAND_IN = """
import json, os, pathlib, socket, sys, time

tf_config = json.loads(os.environ["TF_CONFIG"])
rank, peers = tf_config["task"]["index"], tf_config["cluster"]["worker"]
runs, outside = pathlib.Path(sys.argv[1]), sys.argv[2].rpartition(":")
port = int(peers[rank].rpartition(":")[2])
server = socket.create_server(("0.0.0.0", port))  # every interface, as TensorFlow's gRPC
deadline = time.monotonic() + BOUND
for peer in peers:
    host, _, peer_port = peer.rpartition(":")
    while True:
        try:
            socket.create_connection((host, int(peer_port)), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"worker:{rank} never reached {peer}")
            time.sleep(0.05)
try:
    socket.create_connection((outside[0], int(outside[2])), timeout=2).close()
    reached_out = True
except OSError:
    reached_out = False
record = {
    "port": port,
    "net": os.readlink("/proc/self/ns/net"),
    "user": os.readlink("/proc/self/ns/user"),
    "uid": os.getuid(),
    "told": os.environ.get("TF_MGPU_PRIVATE_NETWORK"),
    "reached_out": reached_out,
}
(runs / f"{rank}.tmp").write_text(json.dumps(record))
(runs / f"{rank}.tmp").rename(runs / f"{rank}.json")
while not (runs / "probed").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
""".replace("BOUND", str(BOUND))

DRIVER = (
    "import sys; from tf_mgpu.cluster import launcher; "
    "sys.exit(launcher.Launcher(sys.argv[3:], workers=2, program=(sys.executable, '-c', "
    "sys.argv[1]), private_network=sys.argv[2] == 'private').run())"
)

PRIVATE = f"tf_mgpu launch: {netns.Network(private=True).line()}"
REFUSED = netns.off(
    "the kernel refused a private network namespace: EPERM (Operation not permitted); with a "
    "user namespace, EPERM (Operation not permitted)"
).refusal()
OFF = (
    "tf_mgpu launch: workers' ports: reachable from other hosts (--noprivate_network); see "
    "docs/multi-worker.md"
)

_SIOCGIFADDR = 0x8915


def other_address() -> str | None:
    """An IPv4 address of this machine that is not loopback: the default route's
    interface's, else the host name's; None when there is neither."""
    with contextlib.suppress(OSError, ValueError):
        for line in pathlib.Path("/proc/net/route").read_text().splitlines()[1:]:
            interface, destination = line.split()[:2]
            if destination == "00000000":
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    request = struct.pack("256s", interface.encode())
                    return socket.inet_ntoa(fcntl.ioctl(s, _SIOCGIFADDR, request)[20:24])
    with contextlib.suppress(OSError):
        address = socket.gethostbyname(socket.gethostname())
        if not address.startswith("127."):
            return address
    return None


NO_OTHER_ADDRESS = (
    "this machine has no IPv4 address but loopback (no default route with one in "
    "/proc/net/route, and its host name resolves to 127.x or not at all): nothing to try the "
    "ports from outside on"
)


def reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


# Between fork and exec of the launcher's process: only calls prepared here, in the parent.
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_PR_CAPBSET_DROP, _CAP_SYS_ADMIN = 24, 21


def _check(result: int) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def without_sys_admin() -> None:
    """A root without CAP_SYS_ADMIN after exec: no CLONE_NEWNET, a user namespace yes."""
    _check(_libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_ADMIN, 0, 0, 0))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# The unshare system call's number and the audit architecture, per machine.
_UNSHARE = {"x86_64": (272, 0xC000003E), "aarch64": (97, 0xC00000B7)}


def _unshare_refused_filter() -> tuple[ctypes.Array, _SockFprog]:
    """A seccomp program: unshare fails with EPERM, every other call is allowed."""
    number, arch = _UNSHARE[platform.machine()]
    load, jump_if_equal, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, fail = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, _ERRNO

    def op(code: int, k: int, true: int = 0, false: int = 0) -> bytes:
        return struct.pack("HBBI", code, true, false, k)

    program = b"".join(
        [
            op(load, 4),  # seccomp_data.arch
            op(jump_if_equal, arch, 1, 0),
            op(ret, allow),  # another architecture's calls: numbered otherwise
            op(load, 0),  # seccomp_data.nr
            op(jump_if_equal, number, 0, 1),
            op(ret, fail),
            op(ret, allow),
        ]
    )
    buffer = ctypes.create_string_buffer(program, len(program))
    return buffer, _SockFprog(len(program) // 8, ctypes.addressof(buffer))


def refusing_unshare():
    """A preexec function after which the kernel refuses unshare, as in many containers."""
    if platform.machine() not in _UNSHARE:
        pytest.skip(f"the seccomp filter knows x86_64 and aarch64 only, not {platform.machine()}")
    buffer, program = _unshare_refused_filter()

    def in_child(program=program, buffer=buffer) -> None:  # the program points into buffer
        del buffer
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0))

    return in_child


@contextlib.contextmanager
def listener(host: str):
    """A port open on `host` in this process's namespace, as 'host:port', for the workers
    to try to reach out to."""
    with socket.create_server((host, 0)) as server:
        yield f"{host}:{server.getsockname()[1]}"


def launch(tmp_path: pathlib.Path, private: bool, preexec, outside: str) -> dict:
    """Runs the launcher over 2 stand-ins; tries their ports from here while they wait.

    Returns the launcher's exit code, lines and log, each worker's record, and whether
    this process reached each of their ports, on 127.0.0.1 and on `other_address()`."""
    runs = tmp_path / "runs"
    runs.mkdir()
    log = tmp_path / "launcher.err"
    mode = "private" if private else "shared"
    command = [sys.executable, "-c", DRIVER, STAND_IN, mode, str(runs), outside]
    with open(log, "w") as err:
        process = subprocess.Popen(
            command,
            cwd=support.ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=preexec,
        )
    try:
        deadline = time.monotonic() + BOUND
        while len(list(runs.glob("*.json"))) < 2 and process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        records = [json.loads(path.read_text()) for path in sorted(runs.glob("*.json"))]
        hosts = ["127.0.0.1", *filter(None, [other_address()])]
        tried = {f"{h}:{r['port']}": reachable(h, r["port"]) for r in records for h in hosts}
        (runs / "probed").write_text("")
        code = process.wait(BOUND + 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    text = log.read_text()
    lines = [line for line in text.splitlines() if line.startswith("tf_mgpu launch: ")]
    return {"code": code, "lines": lines, "log": text, "records": records, "tried": tried}


def own(namespace: str) -> str:
    return os.readlink(f"/proc/self/ns/{namespace}")


@pytest.mark.parametrize("case", ["namespace", "user_namespace"])
def test_no_one_outside_the_namespace_reaches_the_workers_ports(tmp_path, case):
    address = other_address()
    if address is None:
        pytest.skip(NO_OTHER_ADDRESS)
    if case == "user_namespace" and os.geteuid() != 0:
        pytest.skip("not root: the case `namespace` already took the user namespace's path")
    preexec = without_sys_admin if case == "user_namespace" else None
    with listener(address) as outside:
        ran = launch(tmp_path, True, preexec, outside)
    if ran["lines"] and "the kernel refused" in ran["lines"][0]:
        pytest.skip(f"the kernel refuses here: {ran['lines'][0]}")
    assert ran["code"] == 0, ran["log"]
    assert ran["lines"][0] == PRIVATE, ran["log"]
    assert ran["lines"][1].startswith("tf_mgpu launch: started worker:0 "), ran["log"]
    first, second = ran["records"]  # each reached the other, over loopback
    assert first["net"] == second["net"] != own("net"), "one namespace for all, not ours"
    in_user_namespace = first["user"] != own("user")
    assert in_user_namespace == (case == "user_namespace"), (first, own("user"))
    assert first["uid"] == os.getuid(), "the same user inside as outside"
    assert len(ran["tried"]) == 4, ran["tried"]  # 2 ports, on 127.0.0.1 and on `address`
    assert not any(ran["tried"].values()), f"reached from outside: {ran['tried']}"
    assert (first["told"], first["reached_out"]) == ("1", False), first


def test_where_the_kernel_refuses_the_namespace_no_worker_starts_on_open_ports(tmp_path):
    """A seccomp filter makes unshare fail, as in many containers: the launcher says so in one
    line naming the flag that accepts open ports, and starts nothing."""
    with listener(other_address() or "127.0.0.1") as outside:
        ran = launch(tmp_path, True, refusing_unshare(), outside)
    assert ran["code"] == errors.EXIT_USER_ERROR, ran["log"]
    assert not ran["records"], "a worker started"
    assert not ran["lines"], ran["log"]
    said = [line for line in ran["log"].splitlines() if line.startswith("tf_mgpu")]
    assert said == [f"tf_mgpu: error: {REFUSED}"], ran["log"]
    assert "pass --noprivate_network" in REFUSED


def test_with_noprivate_network_the_workers_run_on_open_ports_and_it_says_so(tmp_path):
    """--noprivate_network: their ports are reachable from outside, as the line says."""
    with listener(other_address() or "127.0.0.1") as outside:
        ran = launch(tmp_path, False, None, outside)
    assert ran["code"] == 0, ran["log"]
    assert ran["lines"][0] == OFF, ran["log"]
    assert ran["lines"][1].startswith("tf_mgpu launch: started worker:0 "), ran["log"]
    first, second = ran["records"]
    assert first["net"] == second["net"] == own("net"), "this machine's network"
    assert ran["tried"], ran["log"]
    assert all(ran["tried"].values()), ran["tried"]
    assert (first["told"], first["reached_out"]) == (None, True), first


THREADED = """
import json, os, subprocess, sys, threading
from tf_mgpu.cluster import netns

done = threading.Event()
other = threading.Thread(target=done.wait, daemon=True)
other.start()
network = netns.enter()
child = subprocess.run(
    [sys.executable, "-c", "import os; print(os.readlink('/proc/self/ns/net'))"],
    capture_output=True, text=True, check=True,
).stdout.strip()
print(json.dumps({
    "line": network.line(),
    "caller": os.readlink("/proc/thread-self/ns/net"),
    "other": os.readlink(f"/proc/self/task/{other.native_id}/ns/net"),
    "child": child,
}))
"""


@pytest.mark.parametrize("case", ["namespace", "user_namespace"])
def test_in_a_process_with_threads_the_namespace_holds_the_caller_and_its_children(case):
    """Why the launcher enters before it starts any thread: another thread stays
    outside, and a user namespace is refused outright."""
    if os.geteuid() != 0:
        pytest.skip("not root: CLONE_NEWNET alone, and dropping CAP_SYS_ADMIN, need root")
    done = subprocess.run(
        [sys.executable, "-c", THREADED],
        cwd=support.ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=without_sys_admin if case == "user_namespace" else None,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    if case == "namespace":
        if "the kernel refused" in seen["line"]:
            pytest.skip(f"the kernel refuses here: {seen['line']}")
        assert seen["caller"] == seen["child"] != seen["other"] == own("net"), seen
    else:
        assert seen["line"] == (
            "workers' ports: reachable from other hosts (the kernel refused a private network "
            "namespace: EPERM (Operation not permitted); with a user namespace, EINVAL (Invalid "
            "argument) (this process runs 2 threads; a user namespace needs one)); see "
            "docs/multi-worker.md"
        ), seen
        assert seen["caller"] == seen["child"] == seen["other"] == own("net"), seen
