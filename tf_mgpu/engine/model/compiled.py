"""What `model.compile` set, checked against the model's outputs and the labels, and made.

The compiled loss and metrics are Keras's own objects, which the steps run as
`fit` runs them (`tf_mgpu.engine.step.replica_steps`). This module only says, in one line
each, what Keras would raise deep in a first step or not at all: a model
compiled without a loss, labels that do not fit the outputs, losses or metrics
that name no output, and which sparse labels each output's classes allow.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine.model import heads
from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True)
class Compiled:
    """`sparse_classes`: for a sparse categorical loss, how many classes the model outputs
    (labels must lie below it); for several outputs a dict from each `heads.Head` with
    such a loss to its classes; None otherwise."""

    sparse_classes: int | dict | None = None


def overrides(model: keras.Model, method: str) -> bool:
    """Whether the model's class overrides Keras's `method` (train_step, compute_loss...)."""
    return getattr(type(model), method) is not getattr(keras.Model, method)


def has_call(model: keras.Model) -> bool:
    """Whether the model has a forward pass: a functional or Sequential model, or a class
    that defines call() (a GAN trainer that only holds its generator and discriminator,
    called in its own train_step, does not)."""
    return overrides(model, "call")


def trains_own_loss(model: keras.Model) -> bool:
    """Whether the model's class makes its loss in its own `train_step` or `compute_loss`."""
    return overrides(model, "train_step") or overrides(model, "compute_loss")


def evaluable(model: keras.Model) -> bool:
    """Whether Keras's `evaluate` can score the model: a `test_step` of its own, or a forward
    pass and a compiled loss, an `add_loss` or a `compute_loss` of its own (a VAE that makes
    its loss in train_step alone has none of them: Keras's test_step says "No loss to
    compute")."""
    if overrides(model, "test_step"):
        return True
    # Keras's test_step calls the model: one with no call() (a trainer of parts) cannot.
    return has_call(model) and (
        model.loss is not None or bool(model.losses) or overrides(model, "compute_loss")
    )


def is_sparse_categorical(given) -> bool:
    if isinstance(given, str):
        return given.lower() in ("sparse_categorical_crossentropy", "scce")
    if isinstance(given, keras.losses.SparseCategoricalCrossentropy):
        return True
    return given is keras.losses.sparse_categorical_crossentropy


def check_compiled(model: keras.Model, y, y_pred, where: str) -> Compiled:
    """Checks what `model.compile` set against `y`, the labels of a few examples, and
    `y_pred`, the model's outputs on them. `where` names the task in the errors."""
    if not getattr(model, "compiled", False):
        raise UserError(
            f"{where}: build_model() returned a model that is not compiled; call "
            f"model.compile(optimizer=..., loss=..., metrics=[...]) before returning it"
        )
    unlabelled = isinstance(y, tuple) and not y  # load_data gave no labels (y None)
    if model.loss is None:
        if not (trains_own_loss(model) or model.losses):
            raise UserError(
                f"{where}: build_model() returned a model compiled without a loss, whose "
                f"train_step does not make one (no add_loss either); pass "
                f"model.compile(loss=...), or override train_step as Keras's fit expects"
            )
        return Compiled()
    if unlabelled and not trains_own_loss(model):
        raise UserError(
            f"{where}: load_data's y is None, but the model is compiled with a loss, which "
            f"needs labels; give y, or compile without a loss (a train_step of its own or "
            f"add_loss makes it)"
        )
    if unlabelled or y_pred is None:  # its own train_step pairs what it uses, as in fit
        return Compiled()
    if trains_own_loss(model) and overrides(model, "test_step"):
        # Its own steps decide what the labels are for (the compiled loss may go unused):
        # no check of them against it.
        return Compiled()
    user_metrics, user_weighted = internals.compiled_metrics(model)
    found = heads.of_model(model, y, y_pred, where)
    if found is not None:
        return _several(model, found, y, y_pred, (user_metrics, user_weighted), where)
    if isinstance(model.loss, (list, tuple, dict)):
        raise UserError(
            f"{where}: the model is compiled with several losses but has one output; "
            f"compile it with one loss"
        )
    _one_weight(internals.compiled_loss_weights(model), where)
    _flat(user_metrics, "metrics")
    _flat(user_weighted, "weighted_metrics")
    shape = tuple(y_pred.shape[1:]) if isinstance(y_pred, tf.Tensor) else None
    sparse = is_sparse_categorical(model.loss) and shape
    _check_reduction([model.loss], where)
    return Compiled(sparse_classes=shape[-1] if sparse else None)


def _several(model: keras.Model, found: tuple, y, y_pred, user: tuple, where: str) -> Compiled:
    """The checks of a model with several outputs, `found` those compiled with a loss (see
    `heads.of_model`); compile's arguments are spread over every output, as Keras does."""
    every = heads.all_outputs(model, y_pred, where)
    losses = heads.spread(model.loss, every, "loss", where, some=True)
    weights = internals.compiled_loss_weights(model)
    if weights is not None:
        heads.spread(weights, every, "loss_weights", where)
    for what, given in zip(("metrics", "weighted_metrics"), user, strict=True):
        if given:
            heads.spread(given, every, what, where, some=True)
    sparse = {}
    for head in found:
        given = losses[head.index]
        if is_sparse_categorical(given):
            sparse[head] = head.of(y_pred).shape[-1]
        _check_per_example(given, head.labels(y), head.of(y_pred), where)
    _check_reduction(losses, where)
    return Compiled(sparse_classes=sparse or None)


def loss_reduction(given) -> str:
    """A compiled loss's reduction: a Loss object's own, else Keras's default."""
    loss = keras.losses.get(given) if isinstance(given, dict) else given
    if isinstance(loss, keras.losses.Loss):
        return str(loss.reduction).lower()
    return "sum_over_batch_size"  # a name or a function, which Keras wraps with it


def _check_reduction(losses: list, where: str) -> None:
    """Keras's reductions are exact over replicas (a mean over the share is divided by
    the replicas, a sum is not), but for a mean over each share's own sample weights,
    which no scaling makes the global batch's: one line, on several replicas."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    found = {loss_reduction(loss) for loss in losses if loss is not None}
    if "mean_with_sample_weight" in found and replicas > 1:
        raise UserError(
            f"{where}: the loss's reduction 'mean_with_sample_weight' divides each "
            f"replica's share by its own sample weights, which {replicas} replicas cannot "
            f"make the global batch's; use the default reduction (sum_over_batch_size)"
        )


def _loss_values(given, y, y_pred) -> tf.Tensor:
    """What a compiled loss returns for labels shaped as `y` (zeros, valid for any loss) and
    predictions `y_pred`, before Keras reduces it: one value per example, per pixel..."""
    loss = keras.losses.get(given) if isinstance(given, (str, dict)) else given
    # A Loss's values before reduction (`call`), unless its class computes in `__call__`
    # itself (keras.io's supervised contrastive loss); a function (y, y_pred) as it is.
    own_call = isinstance(loss, keras.losses.Loss) and (
        type(loss).__call__ is keras.losses.Loss.__call__
    )
    fn = loss.call if own_call else loss
    y_pred = tf.convert_to_tensor(y_pred)
    dtype = y_pred.dtype if y_pred.dtype.is_floating else tf.float32
    y, y_pred = tf.zeros(tf.shape(y), dtype), tf.cast(y_pred, dtype)  # any label dtype
    # Labels (N,) against outputs (N, 1) made the same rank, as Keras's wrapper does.
    if y.shape.rank == y_pred.shape.rank - 1 and y_pred.shape[-1] == 1:
        y = tf.expand_dims(y, -1)
    return fn(y, y_pred)


def returns_one_value(model: keras.Model, y, y_pred) -> bool:
    """Whether the model's one compiled loss returns one value for the batch it is handed (a
    mean taken in the function, as keras.io's contrastive and Charbonnier losses take it),
    which Keras adds as it is on each replica, not divided among them as the mean it makes
    of a loss's values (see `replica_steps.compute_loss`). Decided while tracing."""
    if model.loss is None or isinstance(model.loss, (list, tuple, dict)) or y is None:
        return False
    if not isinstance(y_pred, tf.Tensor) or overrides(model, "compute_loss"):
        return False
    return _loss_values(model.loss, y, y_pred).shape.rank == 0


def _check_per_example(given, y, y_pred, where: str) -> None:
    """A loss of one of several outputs must give one value per example. Keras divides a
    mean over the replica's share by the replicas, but a loss that already returns one
    value per batch (a mean taken in the function) is used as it is, so N replicas would
    step N times as far (a model's one loss is divided here: `returns_one_value`)."""
    if _loss_values(given, y, y_pred).shape.rank == 0:
        raise UserError(
            f"{where}: the compiled loss returns one value per batch, not one per "
            f"example; return the per-example values (no mean over the batch): Keras "
            f"divides a mean over each replica's share among the replicas, which "
            f"makes N replicas train as one device"
        )


def check_sample_weights(model: keras.Model, y, y_pred, w, where: str) -> None:
    """Sample weights of several values per example (a weight per token) must be shaped as
    the compiled loss's values for an example, as Keras weighs them; one line otherwise
    (Keras's fit would fail deep in its first step, or weigh the wrong axis)."""
    if w is None or np.ndim(w) < 2 or model.loss is None or heads.nested(y_pred):
        return
    if np.ndim(w) == 2 and np.shape(w)[1] == 1:
        return
    values = tuple(_loss_values(model.loss, y, y_pred).shape)
    if tuple(np.shape(w)) != values:
        raise UserError(
            f"{where}: load_data's sample weights have shape {tuple(np.shape(w))[1:]} per "
            f"example, but the compiled loss gives {values[1:] or 'one value'} per example; "
            f"give one weight per example, or one per value of the loss"
        )


def _one_weight(given, where: str) -> None:
    """The loss weight of a model with one output: a number, or one in a list or dict."""
    if isinstance(given, (list, tuple, dict)):
        values = list(given.values()) if isinstance(given, dict) else list(given)
        if len(values) != 1:
            raise UserError(
                f"{where}: compile's loss_weights holds {len(values)} weights, but the model "
                f"has one output; give one weight"
            )


def _flat(metrics, what: str) -> None:
    """Metrics per output, given for a model with one output, are refused in one line."""
    if isinstance(metrics, dict) or (
        isinstance(metrics, (list, tuple)) and any(isinstance(m, (list, dict)) for m in metrics)
    ):
        raise UserError(
            f"{what} per output are given for a model with one output; pass {what}=[...] "
            f"as a flat list"
        )


def build_compiled(model: keras.Model, x, y, y_pred) -> None:
    """Makes the compiled loss and metrics (their state included) on a few examples, in
    the strategy's scope before the first step, as `fit` makes them; then empties them.
    `y` is `()` where the task gives no labels."""
    y = None if isinstance(y, tuple) and not y else y
    if y_pred is None:  # no forward pass (see `has_call`): its train_step makes what it uses
        return
    if model.loss is not None or model.losses:
        model.compute_loss(x=x, y=y, y_pred=y_pred)
    model.compute_metrics(x, y, y_pred, sample_weight=None)  # as fit calls it: by name
    model.reset_metrics()
