"""Which local devices replicas run on, and splitting the CPU to get several without GPUs."""

import contextlib
import os

import tensorflow as tf

from tf_mgpu.errors import UserError


def split_cpu(count: int) -> None:
    """Makes the host CPU appear as `count` logical devices, so N replicas run without GPUs.

    Must run before TensorFlow initialises its runtime (before the first op);
    repeating the split that is already in place is allowed.
    """
    if count <= 1:
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * count
        )
        # Each logical device runs its replica's ops on its own share of the
        # cores: with every device using every core, replicas fight over them
        # (2 devices on 2 cores: 1.3x faster with one thread each, measured).
        tf.config.threading.set_intra_op_parallelism_threads(
            max(1, len(os.sched_getaffinity(0)) // count)
        )
    except RuntimeError:
        current = len(tf.config.list_logical_devices("CPU"))
        if current != count:
            raise UserError(
                f"cannot split the CPU into {count} logical devices: TensorFlow already "
                f"started with {current}; split before any TensorFlow op runs"
            ) from None


def replica_devices() -> list[str]:
    """Every local GPU if there is one, else every logical CPU device."""
    gpus = tf.config.list_logical_devices("GPU")
    return [d.name for d in gpus or tf.config.list_logical_devices("CPU")]


def grow_gpu_memory(enabled: bool) -> None:
    """With `enabled`, each GPU takes memory as it needs it instead of nearly all at start.

    Must run before TensorFlow initialises its GPUs; then the peak figures in
    the summary are what training used, and other processes can share the GPU.
    """
    if not enabled:
        return
    for gpu in tf.config.list_physical_devices("GPU"):
        # RuntimeError: already initialised, e.g. by an earlier run in this process.
        with contextlib.suppress(RuntimeError):
            tf.config.experimental.set_memory_growth(gpu, True)
