"""Logical CPU devices (conftest split the CPU into NUM_CPU_DEVICES before any op)."""

import pytest
import tensorflow as tf

from tests.support import NUM_CPU_DEVICES
from tf_mgpu.engine.distribute import devices
from tf_mgpu.errors import UserError


def test_replicas_use_every_logical_cpu_without_gpus():
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("this machine has GPUs, which replicas prefer over CPU devices")
    names = devices.replica_devices()
    assert len(names) == NUM_CPU_DEVICES, names
    assert all("CPU" in name for name in names), names


def test_repeating_the_split_in_place_is_allowed():
    devices.split_cpu(NUM_CPU_DEVICES)
    assert len(tf.config.list_logical_devices("CPU")) == NUM_CPU_DEVICES


def test_another_split_after_start_names_both_counts():
    with pytest.raises(UserError, match=f"into 3 logical devices.*started with {NUM_CPU_DEVICES}"):
        devices.split_cpu(3)
