"""The strategy factory: a flag value and this task in, a real tf.distribute.Strategy out."""

import tensorflow as tf

from tf_mgpu.cluster import ports, startup_checks, tf_config
from tf_mgpu.engine.distribute import devices
from tf_mgpu.errors import UserError


def resolve(name: str, node: tf_config.Node, num_cpu_devices: int = 1) -> str:
    """The strategy to build for `name` in this cluster; see `cluster.startup_checks.strategy`."""
    return startup_checks.strategy(name, node, num_cpu_devices)


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


def replica_sum(strategy: tf.distribute.Strategy):
    """A compiled all-reduce: `total(values)` sums float64 `values` (a number or a list) over
    every replica of every worker. Collective under MultiWorkerMirroredStrategy, so every
    worker must call it at the same point. Build it once: each call of the same shape
    reuses one trace."""

    @tf.function
    def total(values: tf.Tensor) -> tf.Tensor:
        per_replica = strategy.run(lambda: tf.identity(values))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return lambda values: total(tf.constant(values, tf.float64)).numpy()


def create(name: str, node: tf_config.Node) -> tf.distribute.Strategy:
    """Builds the strategy; must run before any other TensorFlow op.

    A multi-worker strategy waits in its constructor until every task in
    TF_CONFIG has connected; `tf_mgpu.cluster.supervisor` bounds that wait.
    """
    name = resolve(name, node)
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices=devices.replica_devices())
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(devices.replica_devices()[0])
    if name == "default":
        return tf.distribute.get_strategy()
    try:
        return tf.distribute.MultiWorkerMirroredStrategy()
    except tf.errors.UnknownError as e:
        if node.address is None or "Could not start gRPC server" not in str(e):
            raise
        # Checked before TensorFlow loaded (startup_checks.own_port); taken since, or refused
        # for a reason a bind on 0.0.0.0 did not show.
        port = int(node.address.rpartition(":")[2])
        message = ports.taken(f"TF_CONFIG gives {node}", node.address, ports.bind_error(port))
        raise UserError(message) from None
