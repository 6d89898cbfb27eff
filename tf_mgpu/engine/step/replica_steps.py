"""Per-replica steps of any task: training (the engine's, or the model's own) and evaluation.

The loss and metrics are the model's own Keras objects, run as `fit` runs them
under a strategy: `model.compute_loss` (the compiled loss with its weights and
outputs, and the regularization losses) divides each replica's mean by the
number of replicas, so the replicas' gradients sum to the gradient of the mean
over the global batch, whose shares are equal; `model.compute_metrics` updates
the compiled metrics. The engine keeps what `fit` lacks: the gradient applied
once over every replica (clipping, loss scaling), micro-batches, each
replica's random streams, and evaluation of a padded last batch. What the steps
change is `tf_mgpu.engine.state.training_state.TrainState`.
"""

import functools
import inspect

import keras
import tensorflow as tf

from tf_mgpu.engine.input import data
from tf_mgpu.engine.model import added_losses, compiled, metrics
from tf_mgpu.engine.model.own_steps import evaluates_own_step
from tf_mgpu.engine.state.training_state import TrainState, replica_random_streams
from tf_mgpu.engine.step import masked_losses, replica_state, sparse_gradients


def _examples(x) -> tf.Tensor:
    return tf.shape(tf.nest.flatten(x)[0])[0]


def keras_labels(y):
    """The labels as Keras takes them: None where the task gives none (`fit(x)`)."""
    return None if isinstance(y, tuple) and not y else y


def forward(model: keras.Model, x, training: bool):
    """The model's forward pass as Keras's train_step and test_step call it: with `training`
    only where its call() takes it. Passed to a call() that does not, Keras would hand it on
    to every layer inside (keras.io's focal modulation network then runs a DropPath branch
    its fit never runs)."""
    if "training" in inspect.signature(model.call).parameters:
        return model(x, training=training)
    return model(x)


def step_data(x, y, w=None):
    """What Keras's `fit` hands a model's `train_step` (and `evaluate` its `test_step`)."""
    return keras.utils.pack_x_y_sample_weight(x, keras_labels(y), w)


def compute_loss(model: keras.Model, x, y, y_pred, w, training: bool) -> tf.Tensor:
    """The model's `compute_loss` (Keras's, or the model's own), with `training` where it
    takes it (a compute_loss written before Keras 3.3 does not), as `fit` calls it.
    Under a strategy it is already divided by the number of replicas."""
    y = keras_labels(y)
    one_value = compiled.returns_one_value(model, y, y_pred)
    if not one_value:  # a mean over the global batch's unmasked positions, if masked
        w = masked_losses.global_weights(model, y_pred, w, _examples(x))
    if "training" in inspect.signature(model.compute_loss).parameters:
        loss = model.compute_loss(x, y, y_pred, w, training=training)
    else:
        loss = model.compute_loss(x, y, y_pred, w)
    context = tf.distribute.get_replica_context()
    replicas = 1 if context is None else context.num_replicas_in_sync
    if replicas == 1:
        return loss
    if one_value:
        # Keras divides the added losses among the replicas, but adds a compiled loss of one
        # value per batch as it is: N replicas would step N times as far (Keras's fit does).
        # That part is divided here too, so a mean over each share is one device's mean.
        added = [keras.ops.sum(tf.cast(a, loss.dtype)) for a in model.losses]
        added = tf.add_n(added) / replicas if added else tf.zeros((), loss.dtype)
        loss = (loss - added) / replicas + added
    # An added loss of one value per example, which Keras sums, is a sum over the batch: one
    # device's is the replicas' sums, not divided among them as a regularizer (`added_losses`).
    per_example = [keras.ops.sum(tf.cast(a, loss.dtype)) for a in added_losses.per_example(model)]
    if per_example:
        loss += tf.add_n(per_example) * ((replicas - 1) / replicas)
    return loss


def reported(loss: tf.Tensor) -> tf.Tensor:
    """A replica's `compute_loss` as the mean over its share that one device reports.

    Keras divides a mean over the share by the replicas, and leaves a sum over it
    (reduction "sum") as it is: either way the replicas' losses add up to the global
    batch's, so each share stands for its examples' part times the replicas. A loss
    of one value per example (reduction None) is their mean.
    """
    if loss.shape.rank:
        return tf.reduce_mean(loss)
    context = tf.distribute.get_replica_context()
    replicas = 1 if context is None else context.num_replicas_in_sync
    return loss * replicas


def _gradients(state: TrainState, accumulation_steps: int, x, y, w=None):
    """This replica's share of the gradient of the mean loss over the global batch (of
    `accumulation_steps` micro-batches), and whether its loss was finite."""
    model = state.model
    with tf.GradientTape() as tape, replica_random_streams(state):
        y_pred = forward(model, x, training=True)
        loss = compute_loss(model, x, y, y_pred, w, training=True)
        # As Keras's train_step: a LossScaleOptimizer (mixed_float16) scales the loss and
        # unscales the gradient in `apply`; any other optimizer returns `loss` itself.
        scaled = state.optimizer.scale_loss(loss / accumulation_steps)
    state.train_sums.add(reported(loss), _examples(x))
    state.train_sums.measure(x, keras_labels(y), y_pred, w)
    finite = tf.reduce_all(tf.math.is_finite(loss))
    return tape.gradient(scaled, model.trainable_variables), finite


def replica_train_step(state: TrainState, x, y, w=None, accumulation_steps: int = 1) -> tf.Tensor:
    """One optimizer step on one replica's share of a global batch.

    The optimizer sums gradients over replicas, so every replica applies the
    gradient of the mean loss over the whole global batch. A variable the loss does
    not reach (gradient None) is left out, as Keras's optimizer leaves it out.

    With `accumulation_steps` K > 1 the share arrives as K micro-batches
    (consecutive runs of `len(x) / K` examples): their gradients are summed
    here, one at a time, so only one micro-batch's activations live at once,
    and the optimizer all-reduces and applies once per step.

    Returns whether this replica's loss was finite.
    """
    gradients = functools.partial(_gradients, state, accumulation_steps)
    if accumulation_steps == 1:
        grads, finite = gradients(x, y, w)
    else:
        micro = tf.nest.flatten(x)[0].shape[0] // accumulation_steps

        def micro_batch(j):
            rows = j * micro + tf.range(micro)
            w_rows = None if w is None else tf.gather(w, rows)
            return gradients(data.gather(x, rows), data.gather(y, rows), w_rows)

        # The first micro-batch outside the loop: it says which gradients are None.
        grads, finite = micro_batch(0)
        reached = [g is not None for g in grads]

        def add(j, grads, finite):  # a graph loop: the loops run without AutoGraph (loop.py)
            more, more_finite = micro_batch(j)
            more = [d for d, kept in zip(more, reached, strict=True) if kept]
            return j + 1, [g + d for g, d in zip(grads, more, strict=True)], finite & more_finite

        _, summed, finite = tf.while_loop(
            lambda j, *_: j < accumulation_steps,
            add,
            (tf.constant(1), [tf.convert_to_tensor(g) for g in grads if g is not None], finite),
        )
        found = iter(summed)
        grads = [next(found) if kept else None for kept in reached]
    pairs = [
        (g, v) for g, v in zip(grads, state.model.trainable_variables, strict=True) if g is not None
    ]
    if _reduces_first(state.optimizer):
        reduced = _global_on_first_replica([g for g, _ in pairs])
    else:  # the optimizer all-reduces: its sparse slices cut as one device cuts them
        reduced = sparse_gradients.as_one_device([g for g, _ in pairs])
        if _scales_loss(state.optimizer):
            reduced = _not_finite_everywhere_if_anywhere(reduced)
    pairs = list(zip(reduced, [v for _, v in pairs], strict=True))
    state.optimizer.apply_gradients(pairs)
    replica_state.agree(state.per_replica)
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
        logs = state.model.train_step(step_data(x, y, w))
    replica_state.agree(state.per_replica)
    state.train_sums.count(_examples(x))
    state.train_sums.keep(logs)
    state.steps.assign_add(1)
    loss = logs.get("loss") if isinstance(logs, dict) else None
    if loss is None or not isinstance(loss, (tf.Tensor, tf.Variable, float)):
        return tf.constant(True)
    return tf.reduce_all(tf.math.is_finite(tf.cast(loss, tf.float32)))


def _reduces_first(optimizer) -> bool:
    """Whether the optimizer must see the global batch's gradient, not this replica's share.

    Keras's optimizer clips each replica's share before it sums them, which is not
    what one device does; given the global gradient, it clips as on one device. That
    costs a second all-reduce of the gradient (the optimizer's own, of `g + 0 + ... + 0`):
    Keras's optimizer all-reduces inside `apply` whenever a replica context exists, and
    refuses to apply from a cross-replica one, so only an optimizer of our own could
    clip the one reduced gradient.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return False
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return bool(inner.clipnorm or inner.global_clipnorm or inner.clipvalue)


def _scales_loss(optimizer) -> bool:
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return False
    return isinstance(optimizer, keras.optimizers.LossScaleOptimizer)


def _not_finite_everywhere_if_anywhere(grads: list) -> list:
    """Every replica's gradient made NaN if any replica's, on any worker, is not finite.

    A LossScaleOptimizer decides to skip a step from the first local replica's share,
    before its inner optimizer all-reduces: one worker would skip a step another applies.
    One all-reduce of a flag (not of the gradient) makes that share speak for all, and
    the gradient is reduced once, by the optimizer; a finite one is multiplied by 1, as
    it was. Sparse gradients stay sparse.
    """
    context = tf.distribute.get_replica_context()
    values = [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads]
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in values])
    bad = context.all_reduce(tf.distribute.ReduceOp.SUM, 1.0 - tf.cast(finite, tf.float32))
    factor = tf.where(bad > 0, float("nan"), 1.0)

    def poisoned(g):
        if isinstance(g, tf.IndexedSlices):
            return tf.IndexedSlices(g.values * tf.cast(factor, g.dtype), g.indices, g.dense_shape)
        return g * tf.cast(factor, g.dtype)

    return [poisoned(g) for g in grads]


def _global_on_first_replica(grads: list) -> list:
    """The global gradient on replica 0 and `g * 0` on the others, so that the optimizer,
    which sums what every replica hands it, applies exactly the global gradient
    (`g + 0 + ... + 0 == g`), clips and checks it where replica 0 holds all of it, and
    every replica sees a non-finite gradient as non-finite (`inf * 0` is NaN). Sparse
    gradients are made dense, as Keras's clipping makes them on one device."""
    context = tf.distribute.get_replica_context()
    dense = [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices of an embedding too
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, dense)
    first = tf.equal(context.replica_id_in_sync_group, 0)
    return [g * tf.cast(first, g.dtype) for g in total]


def _first_rows(real: int | None, x, y, w):
    """x, y and w cut to their first `real` rows (None: all of them)."""
    if real is None:
        return x, y, w

    def cut(a):
        return a[:real]

    return (
        tf.nest.map_structure(cut, x),
        tf.nest.map_structure(cut, y),
        None if w is None else cut(w),
    )


def replica_eval_step(
    model: keras.Model, sums: metrics.ModelMetrics, x, y, weights, w=None, real=None
):
    """Measures this replica's share of an evaluation batch into `sums`, as Keras's
    `evaluate` measures a batch: the compiled loss (with the sample weights `w` the task
    gave, if any, and the regularization losses) and the compiled metrics.

    `real` is how many of the share's rows are examples (None: all): at a pass's padded last
    step the model, its loss and its metrics see those rows alone, with no weight Keras was
    not given, so a loss of any shape (per example, per pixel, per token) counts each
    example once. `weights` (1 for an example, 0 for padding) serves only metrics that
    gather every replica's share (see `metrics.ModelMetrics`): each replica then joins with
    its whole share."""
    whole = real is None
    y_pred = forward(model, x, training=False) if whole or sums.gathered else None
    if sums.gathered:
        sums.measure(x, keras_labels(y), y_pred, w, real=None if whole else weights > 0)
    if real == 0:
        masked_losses.join_empty(model, x)
        return
    if not whole:
        x, y, w = _first_rows(real, x, y, w)
        y_pred = forward(model, x, training=False)
    loss = reported(compute_loss(model, x, y, y_pred, w, training=False))
    sums.add(loss, _examples(x))
    if not sums.gathered:
        sums.measure(x, keras_labels(y), y_pred, w)


def replica_own_eval_step(
    model: keras.Model, sums: metrics.ModelMetrics, x, y, weights, w=None, real=None
):
    """The model's own `test_step` on this replica's real rows (see `replica_eval_step`), as
    Keras's `evaluate` runs it under a strategy: the model's metrics and its loss tracker sum
    over replicas when read. A replica whose share is all padding runs nothing."""
    del weights
    if real == 0:
        return
    x, y, w = _first_rows(real, x, y, w)
    sums.keep(model.test_step(step_data(x, y, w)))
    sums.count(_examples(x))


def eval_step(model: keras.Model, sums: metrics.ModelMetrics):
    """The evaluation step of `model`: its own `test_step` if its class overrides it (or
    `compute_loss`), else the compiled loss and metrics."""
    step = replica_own_eval_step if evaluates_own_step(model) else replica_eval_step
    return functools.partial(step, model, sums)
