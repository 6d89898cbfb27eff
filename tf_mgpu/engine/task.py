"""What the engine trains: a task record built once from the user's module.

Users write a task as any Keras user would (see `tf_mgpu.tasks`): a
`build_model()` that returns a compiled model and a `load_data()`. The
adapter in `tf_mgpu.tasks` turns that module into this record, so the
engine depends on no task and never imports one.
"""

import dataclasses
from collections.abc import Callable

import keras

from tf_mgpu.config import Config
from tf_mgpu.engine.input import data


@dataclasses.dataclass(frozen=True)
class Task:
    """The callables the engine needs from a task.

    `build_model()` is called in `strategy.scope()` and returns a compiled
    model: the optimizer, loss and metrics come from `compile`.
    `load_data(config)` returns the splits: arrays in memory (`data.Split`), or a
    tf.data input read as training goes (`stream.Stream`). `preprocess(x)` runs on
    the device inside the compiled step (the data stays compact, e.g. uint8,
    in memory). `reference_batch` is the batch the compiled learning rate
    was tuned for (`--scale_lr`); None means the per-replica batch.
    `export(trained, model_dir)` writes the model's exports; None: the
    default (`tf_mgpu.outputs.export.save`). `dtype` is the Keras dtype policy
    the task set when it was loaded (a file's `keras.config.set_dtype_policy`
    at import), used unless `--dtype` says otherwise. `callbacks()` returns the
    Keras callbacks to run as `fit` runs them (`tf_mgpu.engine.control.callbacks`); None: none.
    """

    name: str
    where: str  # how errors name the task: "--task=FILE"
    build_model: Callable[[], keras.Model]
    load_data: Callable[[Config], data.Data]
    preprocess: Callable = data.identity
    reference_batch: int | None = None
    export: Callable[[keras.Model, str], list[str]] | None = None
    dtype: str = "float32"
    callbacks: Callable[[], list] | None = None
    reads_config: bool = True  # load_data takes the run's Config (and may read its splits)
