"""A compiled loss over a masked output averaged over the global batch's unmasked positions.

Keras's loss leaves out an output's masked positions (its `_keras_mask`: padding tokens after
`Embedding(mask_zero=True)`) and, with the default reduction, divides the sum of the others
by how many there are *in the batch it is handed* (`apply_mask` weighs each unmasked value
`total / valid`). On N replicas each share is averaged over its own unmasked positions, then
divided by N: the mean of N per-share means, not one device's mean over the global batch,
whenever the shares hold different numbers of tokens (Keras's fit on N replicas trains so).

Here every replica adds up its unmasked positions and its examples, one all-reduce, and
weighs its share so that Keras's per-share mean becomes its part of the global mean:
`valid_r / valid * examples / examples_r` (N on equal shares). A replica with no rows at a
pass's padded last step joins with zeros (`join_empty`). The weights reach the loss only:
the metrics, which Keras sums over replicas as counts and totals, get the task's own.
With micro-batches (accumulation) each micro-batch is averaged over its own unmasked positions.
"""

import keras
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine.model import compiled

_MEANS = ("sum_over_batch_size", "mean")


def _averages_over_masks(model: keras.Model) -> bool:
    """Whether the model's one compiled loss (Keras's, not an own compute_loss) is a mean,
    which Keras takes over an output's unmasked positions. Several outputs: left as Keras
    averages them, over each share."""
    if model.loss is None or isinstance(model.loss, (list, tuple, dict)):
        return False
    if compiled.overrides(model, "compute_loss"):
        return False
    return compiled.loss_reduction(model.loss) in _MEANS


def _mask(model: keras.Model, y_pred):
    """The mask of the model's one output, where its one compiled loss averages over it."""
    if not isinstance(y_pred, tf.Tensor) or not _averages_over_masks(model):
        return None
    return internals.keras_mask(y_pred)


def _several_replicas() -> tf.distribute.ReplicaContext | None:
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context


def global_weights(model: keras.Model, y_pred, w, examples: tf.Tensor):
    """The sample weights to hand the compiled loss on this replica (`w`, the task's, or
    None): `w` itself unless the output is masked and there are several replicas."""
    context = _several_replicas()
    mask = _mask(model, y_pred)
    if context is None or mask is None:
        return w
    valid = tf.reduce_sum(tf.cast(mask, tf.float64))
    mine = tf.stack([valid, tf.cast(examples, tf.float64)])
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, mine)
    share = tf.math.divide_no_nan(valid, total[0]) * tf.math.divide_no_nan(total[1], mine[1])
    dtype = y_pred.dtype if y_pred.dtype.is_floating else tf.float32
    share = tf.stop_gradient(tf.cast(share, dtype))
    if w is None:
        return tf.fill(tf.shape(mask), share)  # as Keras weighs it: one weight per position
    return tf.cast(w, dtype) * share


def join_empty(model: keras.Model, x) -> None:
    """At a pass's padded last step, a replica with no real rows joins the all-reduce of
    `global_weights` with nothing (the others wait for it) where the output is masked."""
    context = _several_replicas()
    if context is None or not _averages_over_masks(model):
        return
    y_pred = model(x, training=False)  # traced: only whether it carries a mask is read
    if _mask(model, y_pred) is not None:
        context.all_reduce(tf.distribute.ReduceOp.SUM, tf.zeros([2], tf.float64))
