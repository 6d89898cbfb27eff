"""Sparse gradients (`tf.IndexedSlices`, an embedding's) handed to the optimizer as one device
would hand them.

Keras's optimizers apply an IndexedSlices slice by slice, without summing the slices of one
row first: Adam squares each slice, so two slices `a`, `b` of a row add `a**2 + b**2` to its
second moment where one slice `a + b` adds `(a + b)**2`. The result depends on how the
gradient is cut into slices, and N replicas cut it otherwise than one device wherever a
lookup does not depend on the batch (a position embedding's `arange(length)`): one device
gives one slice per position, summed over the whole batch; the optimizer's all-reduce
concatenates every replica's slices, N per position. (A lookup of the batch's own tokens
gives one slice per token on both: concatenated in replica order, they are one device's.)

So before the optimizer's all-reduce, where every replica looked up the same rows, each
once, the replicas' slices are summed onto replica 0 and the others hand zeros for the same rows:
concatenated, they apply as one device's one slice per row (`s**2 + 0**2`). Keras's fit
on N replicas does not: its Adam trains such models otherwise on N replicas than on one.
(A lookup of the batch's own ids gives a row once per token: a segment id 0 for every token
is such a lookup, left as it is.) Two shares of the very same distinct tokens would be taken
for a position lookup; no other case changes what the optimizer sees.
"""

import tensorflow as tf


def as_one_device(grads: list) -> list:
    """`grads` with each IndexedSlices that every replica holds for the same rows summed
    onto replica 0 (zeros on the others, same rows); any other gradient as it is."""
    context = tf.distribute.get_replica_context()
    at = [
        i
        for i, g in enumerate(grads)
        if isinstance(g, tf.IndexedSlices) and g.values.shape.is_fully_defined()
    ]
    if context is None or context.num_replicas_in_sync == 1 or not at:
        return grads
    first = tf.equal(context.replica_id_in_sync_group, 0)
    # Replica 0's rows on every replica (exact in float64 up to 2**53 rows).
    rows = [tf.cast(grads[i].indices, tf.float64) for i in at]
    firsts = context.all_reduce(
        tf.distribute.ReduceOp.SUM, [r * tf.cast(first, tf.float64) for r in rows]
    )
    # How many replicas hold other rows than replica 0, or a row twice (one slice per
    # token of the share, which concatenated are one device's), per gradient.
    flags = context.all_reduce(
        tf.distribute.ReduceOp.SUM,
        [
            tf.cast(tf.reduce_any(tf.not_equal(r, f)) | _repeats(r), tf.float64)
            for r, f in zip(rows, firsts, strict=True)
        ],
    )
    sums = context.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i].values for i in at])
    out = list(grads)
    for i, flag, total in zip(at, flags, sums, strict=True):
        g = grads[i]
        mine = tf.where(first, total, tf.zeros_like(total))
        values = tf.where(tf.equal(flag, 0.0), mine, g.values)
        out[i] = tf.IndexedSlices(values, g.indices, g.dense_shape)
    return out


def _repeats(rows: tf.Tensor) -> tf.Tensor:
    """Whether a row appears twice: a lookup of the batch's own ids (a segment id 0 for
    every token), not of the same rows for every example."""
    return tf.size(tf.unique(rows).y) < tf.size(rows)
