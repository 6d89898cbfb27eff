"""Loss and metrics of a model over every example of a split, on any strategy."""

import functools
from collections.abc import Callable

import tensorflow as tf

from tf_mgpu.engine import data, loop, metrics
from tf_mgpu.engine.objective import Objective
from tf_mgpu.engine.task import output_float32
from tf_mgpu.errors import UserError


def evaluate(
    strategy: tf.distribute.Strategy,
    predict: Callable,
    found: Objective,
    split: data.Split,
    batch_size: int,
    preprocess: Callable = data.identity,
    losses: Callable[[], list] = list,
) -> dict:
    """`test_loss`, `test_<metric>` and `test_examples` of `predict` over `split`.

    The split is spread over the strategy's replicas, `batch_size` examples
    per replica per step, as the trainer evaluates: padded to whole global
    batches with examples of weight 0, so each example counts once however
    many replicas there are. Build `predict`'s variables in `strategy.scope()`.
    Under MultiWorkerMirroredStrategy every worker calls this at once, each
    with the whole split. `losses()`, read after each call of `predict`, gives
    the model's regularization losses, which the loss includes as Keras's
    `evaluate` does.
    """
    if len(split) == 0:
        raise UserError("the test split is empty; pass a --test_split with examples")
    global_batch = batch_size * strategy.num_replicas_in_sync
    with strategy.scope():
        sums = metrics.Sums("evaluate", found.metrics, found.output_losses)
        if sums.stateful:  # their state is made on a first update, before the replicas run
            first = split.take(slice(0, 2))
            y = tf.nest.map_structure(tf.constant, first.y)
            sums.build(y, output_float32(predict(preprocess(first.x))))

    def replica_step(x, y, weights, w=None):  # w: the split's sample weights, if any
        y_pred = output_float32(predict(x))
        per_example, parts = found.per_example(y, y_pred, w)
        regularization = losses()
        if regularization:
            per_example += tf.cast(tf.add_n(regularization), per_example.dtype)
        sums.update(per_example, y, y_pred, weights, parts, w)

    # No XLA: it would compile for longer than one pass over the test split takes.
    evaluation = loop.StreamEval(
        strategy,
        replica_step,
        functools.partial(data.eval_dataset, split, global_batch, preprocess=preprocess),
        steps=data.eval_steps(len(split), global_batch),
        scope="none",
    )
    evaluation.run()
    return metrics.prefixed("test", sums.result())
