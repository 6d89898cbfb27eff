"""A model that runs on the global batch but not on a replica's share of it, said in one line.

A model or train_step that holds the batch size as a constant (keras.io's DDIM, NeRF, GAN-ADA
and switch transformer write `BATCH_SIZE` into a reshape or a tensor's shape) cannot run on N
replicas, each handed a share of `global / N` examples: Keras's fit on N replicas fails the
same, deep in a first step. When building the model on a share fails, it is built once more,
on one device, on as many examples as the global batch: if that runs, the model holds the
global batch's size, and the run says so instead of the shape error's traceback.
"""

import tensorflow as tf

from tf_mgpu.config import Config
from tf_mgpu.engine.input import data
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError


def refuse_if_global(
    create_state,
    strategy: tf.distribute.Strategy,
    config: Config,
    task: Task,
    train: data.Split,
    test: data.Split,
    error: Exception,
) -> None:
    """Raises the one line if `create_state` (as `training_state.create_state`), which failed
    with `error` on a share, runs on one device at the global batch; else returns."""
    replicas = strategy.num_replicas_in_sync
    share = config.batch_size
    total = share * replicas
    if replicas == 1 or len(train) < total:
        return
    first = train.take(slice(0, total))
    tested = test.take(slice(0, min(total, len(test))))
    try:
        create_state(tf.distribute.get_strategy(), config, task, first, tested)
    except Exception:  # not the batch size: the first error stands
        return
    line = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
    raise UserError(
        f"{task.where}: the model runs on a batch of {total} but not on a replica's share of "
        f"{share} ({type(error).__name__}: {line}): it holds the global batch's size as a "
        f"constant, which {replicas} replicas cannot run (nor can Keras's fit on them); take "
        f"the size from the batch (keras.ops.shape(x)[0]), or run on one device with "
        f"--batch_size={total}"
    ) from error
