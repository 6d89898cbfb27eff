"""The strategy factory."""

import socket
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.support import NUM_CPU_DEVICES, ROOT, environment
from tf_mgpu.cluster import local, tf_config
from tf_mgpu.engine.distribute import strategies
from tf_mgpu.errors import UserError

ALONE = tf_config.Node()
TWO = tf_config.Node(addresses=("localhost:1", "localhost:2"))


@pytest.mark.parametrize(
    ("name", "task", "expected"),
    [
        ("mirrored", ALONE, "mirrored"),
        ("mirrored", TWO, "multi_worker_mirrored"),
        ("multi_worker_mirrored", ALONE, "multi_worker_mirrored"),
        ("multi_worker_mirrored", TWO, "multi_worker_mirrored"),
        ("one_device", ALONE, "one_device"),
        ("default", ALONE, "default"),
    ],
)
def test_resolve(name, task, expected):
    assert strategies.resolve(name, task) == expected


@pytest.mark.parametrize("name", ["one_device", "default"])
def test_single_device_strategy_refuses_a_cluster(name):
    with pytest.raises(UserError, match="TF_CONFIG names 2 tasks"):
        strategies.resolve(name, TWO)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(UserError, match="mirrored, multi_worker_mirrored, one_device, default"):
        strategies.resolve("parameter_server", ALONE)


@pytest.mark.parametrize(
    ("name", "kind", "replicas"),
    [
        ("mirrored", tf.distribute.MirroredStrategy, NUM_CPU_DEVICES),
        ("one_device", tf.distribute.OneDeviceStrategy, 1),
        ("default", tf.distribute.Strategy, 1),
    ],
)
def test_create_returns_a_real_strategy(name, kind, replicas):
    strategy = strategies.create(name, ALONE)
    assert isinstance(strategy, kind)
    assert strategy.num_replicas_in_sync == replicas
    assert strategies.name_of(strategy) == name


def test_a_port_taken_after_the_early_check_is_still_one_user_error_naming_it():
    # TensorFlow's own failure ("Could not start gRPC server", a traceback) when another
    # process took the port between startup_checks.own_port and the server's start.
    # A fresh process: a multi-worker strategy is built once per process.
    code = (
        "from tf_mgpu.cluster import tf_config\n"
        "from tf_mgpu.engine.distribute import strategies\n"
        "from tf_mgpu.errors import UserError\n"
        "try:\n"
        "    strategies.create('multi_worker_mirrored', tf_config.node_from_env())\n"
        "except UserError as e:\n"
        "    print('UserError:', e)\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spec = {"worker": [f"localhost:{port}", f"localhost:{local.free_ports(1)[0]}"]}
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=environment(local.tf_config(spec, "worker", 0)),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(
        f"UserError: TF_CONFIG gives worker:0 localhost:{port}, but another process listens on "
        f"port {port} (Address already in use): find it with `ss -ltnp 'sport = :{port}'`"
    ), done.stdout
