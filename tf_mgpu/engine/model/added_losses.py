"""Which of a model's added losses (`add_loss`) hold one value per example.

Keras sums an added loss's values and divides the sum among the replicas, as a regularizer
needs (each replica adds the same one). An added loss of one value per example (keras.io's
CTC layers add `ctc_batch_cost`'s, shape (batch, 1)) is a sum over the batch instead: one
device's is the replicas' sums, undivided (`replica_steps.compute_loss` takes the division
back). Whether a loss follows the batch is found once the model is built, by calling it on
one row: a penalty of one value per unit, as many units as rows, does not follow it.
"""

import weakref

import keras
import tensorflow as tf

_FOUND: "weakref.WeakKeyDictionary[keras.Model, tuple[int, ...]]" = weakref.WeakKeyDictionary()


def find(model: keras.Model, x) -> None:
    """Records which of `model.losses`, just made by calling it on `x`, follow its rows."""
    rows = tf.nest.flatten(x)[0].shape[0]
    candidates = _one_per_row(model.losses, rows)
    if not candidates or rows == 1:
        return
    try:
        model(tf.nest.map_structure(lambda a: a[:1], x), training=False)
    except Exception:  # a model held to its batch size: none follow it
        return
    found = sorted(set(candidates) & set(_one_per_row(model.losses, 1)))
    if found:
        _FOUND[model] = tuple(found)


def per_example(model: keras.Model) -> list:
    """The model's added losses of one value per example, in the step that made them."""
    at = _FOUND.get(model, ())
    return [a for i, a in enumerate(model.losses) if i in at]


def _one_per_row(losses: list, rows) -> list[int]:
    return [i for i, a in enumerate(losses) if tuple(a.shape) in ((rows,), (rows, 1))]
