"""`tf_mgpu.train`: the engine of `python -m tf_mgpu.main`, called from Python."""

import dataclasses

from tf_mgpu import tasks
from tf_mgpu.cluster import preflight, tf_config
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import preflight as mnist_preflight


def train(task, **settings) -> dict:
    """See `tf_mgpu.train`."""
    config = _config(task, settings)
    node = tf_config.task_from_env()
    preflight.strategy(config.strategy, node, config.num_cpu_devices)
    if node.is_chief:
        preflight.model_dir(config.model_dir)
    if isinstance(task, str) and tasks.uses_mnist(task):
        mnist_preflight.data(config.data_dir, config.manual_dir)
    from tf_mgpu import training  # loads TensorFlow

    result = training.run(config, task)
    return {} if result is None else result.summary


def _config(task, settings: dict) -> Config:
    fields = {field.name for field in dataclasses.fields(Config)} - {"task"}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise UserError(
            f"tf_mgpu.train: unknown settings {', '.join(unknown)}; settings are named like "
            f"main's flags: {', '.join(sorted(fields))}"
        )
    name = task if isinstance(task, str) else getattr(task, "__name__", type(task).__name__)
    return Config(task=name, **{"model_dir": None, **settings})
