"""Whether this task can listen on its TF_CONFIG port, asked before TensorFlow's gRPC server is.

TensorFlow's server listens on every interface (0.0.0.0:PORT); a port another process
listens on made it fail with "Could not start gRPC server" and a traceback, after 6 s of
import. `bind_error` asks the kernel the same question in a millisecond, and `taken` is
the one line that names the port and how to find who holds it. Nothing here imports
TensorFlow.
"""

import errno
import socket


def bind_error(port: int) -> OSError | None:
    """Why binding every interface's `port` fails now, or None if it would succeed.

    A listener blocks the bind; connections of a finished run in TIME_WAIT do not
    (SO_REUSEADDR, as gRPC sets it)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("0.0.0.0", port))
    except OSError as e:
        return e
    finally:
        probe.close()
    return None


def finding(port: int) -> str:
    """How to find the process listening on `port`."""
    return f"find it with `ss -ltnp 'sport = :{port}'` (or `lsof -i :{port}`)"


def taken(who: str, address: str, error: OSError | None) -> str:
    """One line: `who` (e.g. "TF_CONFIG gives worker:0") cannot listen on `address`'s port
    for `error` (None: TensorFlow failed and the port is free again), and the fix."""
    port = int(address.rpartition(":")[2])
    if error is not None and error.errno == errno.EADDRINUSE:
        return (
            f"{who} {address}, but another process listens on port {port} ({error.strerror}): "
            f"{finding(port)} and stop it, or give this task a free port"
        )
    if error is not None and error.errno == errno.EACCES:
        return (
            f"{who} {address}, but port {port} needs root ({error.strerror}): give this task "
            f"a port above 1023"
        )
    reason = error.strerror if error is not None else "Could not start gRPC server"
    return (
        f"{who} {address}, but TensorFlow could not listen on port {port} ({reason}): check "
        f"that it is free ({finding(port)}), or give this task another port"
    )
