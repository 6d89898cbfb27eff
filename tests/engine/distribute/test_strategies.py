"""The strategy factory."""

import pytest
import tensorflow as tf

from tests.support import NUM_CPU_DEVICES
from tf_mgpu.cluster import tf_config
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
