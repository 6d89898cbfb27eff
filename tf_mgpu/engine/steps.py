"""Per-replica steps of any task: training (the engine's, or the model's own) and evaluation.

The step maths live here, not in the task: the loss of each replica is the
sum of its per-example losses divided by the global batch, plus the
model's regularization losses divided by the number of replicas, so the
all-reduced gradient is that of the mean loss over the global batch with
the regularization counted once. That is what makes N replicas train like
one device, whatever the compiled loss object's own reduction. What the
steps change is `tf_mgpu.engine.state.TrainState`.
"""

import functools

import tensorflow as tf

from tf_mgpu.engine import data, metrics
from tf_mgpu.engine.state import TrainState, replica_random_streams
from tf_mgpu.engine.task import output_float32


def _outputs(state: TrainState, x, training: bool):
    return output_float32(state.model(x, training=training))


def _gradients(state: TrainState, global_batch: int, accumulation_steps: int, x, y, w=None):
    """This replica's share of the gradient of the mean loss over the global batch,
    and whether its loss was finite. With sample weights `w`, the loss is the sum of
    the weighted losses divided by the global batch, as Keras's default reduction."""
    with tf.GradientTape() as tape, replica_random_streams(state):
        y_pred = _outputs(state, x, training=True)
        # With several outputs, each example's loss sums the outputs' weighted losses.
        per_example, parts = state.objective.per_example(y, y_pred, w)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        regularization = _regularization(state, per_example.dtype)
        if regularization is not None:  # once per step over all replicas
            loss += tf.nn.scale_regularization_loss(regularization) / accumulation_steps
            per_example += regularization  # reported as Keras reports it
        # As Keras's train_step: a LossScaleOptimizer (mixed_float16) scales the loss and
        # unscales the gradient in `apply`; any other optimizer returns `loss` itself.
        scaled = state.optimizer.scale_loss(loss)
    state.train_sums.update(per_example, y, y_pred, parts=parts, w=w)
    return tape.gradient(scaled, state.model.trainable_variables), tf.math.is_finite(loss)


def replica_train_step(
    state: TrainState, global_batch: int, x, y, w=None, accumulation_steps: int = 1
) -> tf.Tensor:
    """One optimizer step on one replica's share of a global batch.

    The optimizer sums gradients over replicas, so every replica applies the
    gradient of the mean loss over the whole global batch.

    With `accumulation_steps` K > 1 the share arrives as K micro-batches
    (consecutive runs of `len(y) / K` examples): their gradients are summed
    here, one at a time, so only one micro-batch's activations live at once,
    and the optimizer all-reduces and applies once per step.

    Returns whether this replica's loss was finite.
    """
    variables = state.model.trainable_variables
    gradients = functools.partial(_gradients, state, global_batch, accumulation_steps)
    if accumulation_steps == 1:
        grads, finite = gradients(x, y, w)
    else:
        micro = tf.nest.flatten(y)[0].shape[0] // accumulation_steps

        def add(j, grads, finite):  # a graph loop: the loops run without AutoGraph (loop.py)
            rows = j * micro + tf.range(micro)
            w_rows = None if w is None else tf.gather(w, rows)
            more, more_finite = gradients(data.gather(x, rows), data.gather(y, rows), w_rows)
            return j + 1, [g + d for g, d in zip(grads, more, strict=True)], finite & more_finite

        _, grads, finite = tf.while_loop(
            lambda j, *_: j < accumulation_steps,
            add,
            (tf.constant(0), [tf.zeros_like(v) for v in variables], tf.constant(True)),
        )
    if _reduces_first(state.optimizer):
        grads = _global_on_first_replica(grads)
    state.optimizer.apply_gradients(zip(grads, variables, strict=True))
    if state.steps is not None:
        state.steps.assign_add(1)
    return finite


def replica_own_step(state: TrainState, x, y, w=None) -> tf.Tensor:
    """One step of the model's own `train_step` on one replica's share of a global batch.

    Keras's `fit` runs the same call inside `strategy.run`: the step decides how
    its loss is reduced (Keras's `compute_loss` divides the compiled loss by the
    replica count) and applies the optimizer, which sums the replicas' gradients.
    Returns whether the loss it reports is finite (True if it reports none).
    """
    with replica_random_streams(state):
        logs = state.model.train_step((x, y) if w is None else (x, y, w))
    state.train_sums.count(tf.shape(tf.nest.flatten(y)[0])[0])
    state.steps.assign_add(1)
    loss = logs.get("loss") if isinstance(logs, dict) else None
    if loss is None or not isinstance(loss, (tf.Tensor, tf.Variable, float)):
        return tf.constant(True)
    return tf.reduce_all(tf.math.is_finite(tf.cast(loss, tf.float32)))


def _reduces_first(optimizer) -> bool:
    """Whether the optimizer must see the global batch's gradient, not this replica's share.

    Keras's optimizer clips each replica's share before it sums them, and a
    LossScaleOptimizer decides to skip a step from the first local replica's
    share: neither is what one device does (nor, for the skip, agreed between
    workers). Given the global gradient, both act as on one device.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return False
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    clips = inner.clipnorm or inner.global_clipnorm or inner.clipvalue
    return bool(clips) or inner is not optimizer


def _global_on_first_replica(grads: list) -> list:
    """The global gradient on replica 0 and `g * 0` on the others, so that the optimizer,
    which sums what every replica hands it, applies exactly the global gradient
    (`g + 0 + ... + 0 == g`), clips and checks it where replica 0 holds all of it, and
    every replica sees a non-finite gradient as non-finite (`inf * 0` is NaN)."""
    context = tf.distribute.get_replica_context()
    dense = [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices of an embedding too
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, dense)
    first = tf.equal(context.replica_id_in_sync_group, 0)
    return [g * tf.cast(first, g.dtype) for g in total]


def _regularization(state: TrainState, dtype) -> tf.Tensor | None:
    """The model's regularization losses of the call just made, summed, or None."""
    losses = state.model.losses
    return tf.cast(tf.add_n(losses), dtype) if losses else None


def replica_eval_step(state: TrainState, sums: metrics.Sums, x, y, weights, w=None) -> None:
    """Sums the test loss as Keras's `evaluate` reports it: the compiled loss (times the
    sample weights `w`, if any) plus the regularization losses, and every metric
    (unweighted by `w`, as Keras's compiled `metrics` are, but for `weighted_metrics`)
    into `sums`. `weights` is 0 for padding."""
    y_pred = _outputs(state, x, training=False)
    per_example, parts = state.objective.per_example(y, y_pred, w)
    regularization = _regularization(state, per_example.dtype)
    if regularization is not None:
        per_example += regularization
    sums.update(per_example, y, y_pred, weights, parts, w)


def replica_own_eval_step(state: TrainState, sums: metrics.KerasMetrics, x, y, weights, w=None):
    """The model's own `test_step` on this replica's real examples (padding, weight 0,
    dropped), as Keras's `evaluate` runs it under a strategy: the model's metrics and
    its loss tracker sum over replicas when read. A replica whose share is all padding
    runs nothing."""
    real = weights > 0

    def kept(a):
        return tf.boolean_mask(a, real)

    x, y = tf.nest.map_structure(kept, x), tf.nest.map_structure(kept, y)
    batch = (x, y) if w is None else (x, y, kept(w))
    count = tf.shape(tf.nest.flatten(y)[0])[0]
    tf.cond(count > 0, lambda: _test_step(state, batch), tf.no_op)
    sums.count(count)


def _test_step(state: TrainState, batch) -> tf.Operation:
    state.model.test_step(batch)
    return tf.no_op()
