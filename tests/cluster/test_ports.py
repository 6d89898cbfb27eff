"""Whether this task can listen on its port, asked of the kernel before TensorFlow is."""

import errno
import socket

from tf_mgpu.cluster import local, ports


def test_a_listened_port_is_in_use_and_a_free_one_is_not():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # one interface: TensorFlow's server binds them all
        taken.listen()
        port = taken.getsockname()[1]
        assert ports.bind_error(port).errno == errno.EADDRINUSE
    assert ports.bind_error(port) is None


def test_connections_of_a_finished_run_do_not_count():
    # The server side closes first and keeps the port in TIME_WAIT, as a worker that
    # just exited does; gRPC binds over it (SO_REUSEADDR), and so must the check.
    port = local.free_ports(1)[0]
    listener = socket.create_server(("127.0.0.1", port))
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()
    listener.close()
    client.close()
    assert ports.bind_error(port) is None


def test_the_line_names_the_port_and_how_to_find_its_holder():
    in_use = OSError(errno.EADDRINUSE, "Address already in use")
    line = ports.taken("TF_CONFIG gives worker:0", "localhost:2001", in_use)
    assert line.startswith("TF_CONFIG gives worker:0 localhost:2001, but another process "), line
    assert "port 2001 (Address already in use)" in line, line
    assert "`ss -ltnp 'sport = :2001'` (or `lsof -i :2001`)" in line, line
    root = ports.taken("TF_CONFIG gives worker:0", "h:80", OSError(errno.EACCES, "Denied"))
    assert "port 80 needs root (Denied): give this task a port above 1023" in root, root
    gone = ports.taken("TF_CONFIG gives worker:0", "h:2001", None)
    assert "could not listen on port 2001 (Could not start gRPC server)" in gone, gone
