"""Loss and metrics of a compiled Keras model over every example of a split, on any strategy."""

import functools

import keras
import tensorflow as tf

from tf_mgpu.engine.input import data
from tf_mgpu.engine.model import added_losses, metrics
from tf_mgpu.engine.model.compiled import build_compiled, check_compiled
from tf_mgpu.engine.model.own_steps import evaluates_own_step
from tf_mgpu.engine.step import loop
from tf_mgpu.engine.step import replica_steps as steps
from tf_mgpu.errors import UserError


def evaluate(
    strategy: tf.distribute.Strategy,
    model,
    split: data.Split,
    batch_size: int,
    preprocess=data.identity,
    where: str = "the model",
) -> dict:
    """`test_loss`, `test_<metric>` and `test_examples` of the compiled `model` over `split`.

    The step is the trainer's evaluation step (`steps.eval_step`): the split is
    spread over the strategy's replicas, `batch_size` examples per replica per
    step, padded to whole global batches with examples of weight 0, so each
    example counts once however many replicas there are. Load `model` in
    `strategy.scope()`. Under MultiWorkerMirroredStrategy every worker calls
    this at once, each with the whole split. `where` names the model in errors.
    """
    if len(split) == 0:
        raise UserError("the test split is empty; pass a --test_split with examples")
    global_batch = batch_size * strategy.num_replicas_in_sync
    first = split.take(slice(0, batch_size))
    x = preprocess(tf.nest.map_structure(tf.constant, first.x))
    y = tf.nest.map_structure(tf.constant, first.y)
    y_pred = model(x, training=False)  # outside the scope: a SavedModel's functions too
    if isinstance(model, keras.Model):  # scored as the run that trained it scored it
        added_losses.find(model, x)
    with strategy.scope():
        check_compiled(model, first.y, y_pred, where)
        build_compiled(model, x, y, y_pred)
        sums = metrics.ModelMetrics(model, "evaluate", own_loss=evaluates_own_step(model))
    # No XLA: it would compile for longer than one pass over the test split takes.
    evaluation = loop.StreamEval(
        strategy,
        steps.eval_step(model, sums),
        functools.partial(data.eval_dataset, split, global_batch, preprocess=preprocess),
        examples=len(split),
        global_batch=global_batch,
        scope="none",
    )
    sums.reset()
    evaluation.run()
    return metrics.prefixed("test", sums.result())
