"""`tf_mgpu.train`: the engine of `python -m tf_mgpu.main`, called from Python."""

import dataclasses

from tf_mgpu import compile_cache, tasks
from tf_mgpu.cluster import elastic, startup_checks, tf_config
from tf_mgpu.config import Config
from tf_mgpu.errors import SettingError, UserError
from tf_mgpu.tasks.mnist import preflight as mnist_preflight


def train(task, **settings) -> dict:
    """See `tf_mgpu.train`."""
    config = _config(task, settings)
    check_before_tensorflow(config, tf_config.node_from_env(), named=isinstance(task, str))
    compile_cache.enable(config.compile_cache, config.data_dir)  # before TF sets up devices
    from tf_mgpu import training  # loads TensorFlow

    result = training.run(config, task)
    return {} if result is None else result.summary


def check_before_tensorflow(config: Config, node: tf_config.Node, named: bool = True) -> None:
    """What can be checked in milliseconds, before TensorFlow loads (6 s): the strategy
    against the cluster, that --batch_workers' batch splits over it, the chief's model dir,
    the --task name (when `named`), then that a multi-worker task can listen on its port
    (a setting's mistake is named before the machine's), and last, since offline it may
    wait 5 s for the network, that MNIST can be had for a built-in task.
    """
    strategy = startup_checks.strategy(config.strategy, node, config.num_cpu_devices)
    elastic.per_replica_batch(config.batch_size, config.batch_workers, node.num_workers)
    if node.is_chief:
        startup_checks.model_dir(config.model_dir)
    if named:
        tasks.check(config.task)
    if strategy == "multi_worker_mirrored":
        startup_checks.own_port(node)
    if named and tasks.uses_mnist(config.task):
        mnist_preflight.data(config.data_dir, config.manual_dir)


def _config(task, settings: dict) -> Config:
    fields = {field.name for field in dataclasses.fields(Config)} - {"task"}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise UserError(
            f"tf_mgpu.train: unknown settings {', '.join(unknown)}; settings are named like "
            f"main's flags: {', '.join(sorted(fields))}"
        )
    name = task if isinstance(task, str) else getattr(task, "__name__", type(task).__name__)
    try:
        return Config(task=name, **{"model_dir": None, **settings})
    except SettingError as e:  # the same check as main's flags, named as an argument here
        raise SettingError(f"tf_mgpu.train: {e}") from None
