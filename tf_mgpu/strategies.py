"""The strategy factory: a flag value and this task in, a real tf.distribute.Strategy out."""

import tensorflow as tf

from tf_mgpu import cluster, devices
from tf_mgpu.config import STRATEGIES
from tf_mgpu.errors import UserError


def resolve(name: str, task: cluster.Task, num_cpu_devices: int = 1) -> str:
    """The strategy to build for `name` in this cluster.

    `mirrored` means "mirror over every device I am given": when TF_CONFIG
    names several tasks, those devices span machines, so it becomes
    `multi_worker_mirrored`. Single-device strategies cannot span a cluster;
    running them on every task would train independent models that overwrite
    each other's outputs, so that is refused. So is `num_cpu_devices` > 1 in
    a cluster: MultiWorkerMirroredStrategy runs one replica per GPU, or one
    per worker on CPUs, whatever the logical devices.
    """
    if name not in STRATEGIES:
        raise UserError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if task.num_workers == 1:
        return name
    if num_cpu_devices > 1:
        raise UserError(
            f"--num_cpu_devices={num_cpu_devices} cannot apply under TF_CONFIG: "
            f"MultiWorkerMirroredStrategy runs one replica per GPU, or one per worker on "
            f"CPUs; drop the flag, or unset TF_CONFIG to mirror over {num_cpu_devices} CPUs"
        )
    if name in ("mirrored", "multi_worker_mirrored"):
        return "multi_worker_mirrored"
    raise UserError(
        f"--strategy={name} trains on one device, but TF_CONFIG names {task.num_workers} "
        f"tasks; use --strategy=multi_worker_mirrored, or unset TF_CONFIG"
    )


def name_of(strategy: tf.distribute.Strategy) -> str:
    """The --strategy value that builds a strategy of this kind.

    Class names mislead: MultiWorkerMirroredStrategy's is CollectiveAllReduceStrategy.
    """
    kinds = (
        ("multi_worker_mirrored", tf.distribute.MultiWorkerMirroredStrategy),
        ("mirrored", tf.distribute.MirroredStrategy),
        ("one_device", tf.distribute.OneDeviceStrategy),
    )
    return next((name for name, kind in kinds if isinstance(strategy, kind)), "default")


def devices_of(strategy: tf.distribute.Strategy) -> list[str]:
    """The devices this process's replicas run on (the default strategy has no list)."""
    if name_of(strategy) == "default":
        return devices.replica_devices()[:1]
    return list(strategy.extended.worker_devices)


def create(name: str, task: cluster.Task) -> tf.distribute.Strategy:
    """Builds the strategy; must run before any other TensorFlow op.

    A multi-worker strategy waits in its constructor until every task in
    TF_CONFIG has connected; `tf_mgpu.supervisor` bounds that wait.
    """
    name = resolve(name, task)
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices=devices.replica_devices())
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(devices.replica_devices()[0])
    if name == "default":
        return tf.distribute.get_strategy()
    return tf.distribute.MultiWorkerMirroredStrategy()
