"""Which local devices replicas run on, and splitting the CPU to get several without GPUs."""

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
