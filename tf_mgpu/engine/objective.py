"""A compiled Keras model's loss and metrics, as per-example values the engine reduces itself.

`model.fit` reduces the compiled loss over the batch it is handed. Under
tf.distribute that batch is one replica's share, and a loss object's own
reduction ("sum", "none", a custom one) changes the maths. The engine takes
per-example values instead and reduces them one way, whatever the loss
object says: the sum over the replica's examples divided by the global
batch (`tf.nn.compute_average_loss`), so summing the replicas' gradients
gives the gradient of the mean loss over the global batch. Metrics are
per-example values too, summed in float64 over every replica and worker.

A loss that returns more than one value per example (per time step, say)
is averaged over those first, as Keras's default reduction does.
"""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf

from tf_mgpu.engine.per_example import is_sparse_categorical, loss_function, metric_function
from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True)
class Objective:
    """`loss(y, y_pred)` and each `metrics[name](y, y_pred)` return one value per example;
    a stateful Keras metric (AUC, Precision...) stands as itself (see `metrics.Sums`).

    `sparse_classes`: for a sparse categorical loss, how many classes the model
    outputs (labels must lie below it); None otherwise.
    """

    loss: Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
    metrics: dict[str, Callable[[tf.Tensor, tf.Tensor], tf.Tensor] | keras.metrics.Metric]
    sparse_classes: int | None = None


def from_compiled(
    model: keras.Model, y_shape: tuple, y_pred_shape: tuple | None, where: str
) -> Objective:
    """The objective `model.compile` set; `y_shape` is one label's shape and `y_pred_shape`
    one output's (None for several outputs), which choose what 'accuracy' means, as
    Keras does from the first batch.

    `where` names the task in the errors, which are one line each.
    """
    if not getattr(model, "compiled", False) or model.loss is None:
        raise UserError(
            f"{where}: build_model() returned a model that is not compiled with a loss; "
            f"call model.compile(optimizer=..., loss=..., metrics=[...]) before returning it"
        )
    if isinstance(model.loss, (list, tuple, dict)):
        raise UserError(
            f"{where}: the model is compiled with several losses; tf_mgpu trains models "
            f"with one loss (one output); combine them into one loss function"
        )
    if model._compile_metrics and model._compile_metrics._user_weighted_metrics:
        raise UserError(
            f"{where}: the model is compiled with weighted_metrics, which tf_mgpu does not "
            f"compute yet; pass them as metrics=[...] (unweighted)"
        )
    loss = _scaled(loss_function(model.loss), _one_weight(loss_weights(model), where))
    metrics = {}
    for given in compiled_metrics(model):
        name, per_example = metric_function(given, y_shape, y_pred_shape)
        metrics[name] = per_example
    sparse = is_sparse_categorical(model.loss) and y_pred_shape
    return Objective(
        loss=loss, metrics=metrics, sparse_classes=y_pred_shape[-1] if sparse else None
    )


def output_shape(model: keras.Model, x) -> tuple | None:
    """One output's shape from calling `model` on the examples `x` (a subclassed model
    declares none), or None for several outputs."""
    y_pred = model(x, training=False)
    return tuple(y_pred.shape[1:]) if isinstance(y_pred, tf.Tensor) else None


def loss_weights(model: keras.Model):
    """compile's `loss_weights` as given (None, a number, a list or a dict)."""
    # As for the metrics, Keras keeps them as given only here.
    compiled = getattr(model, "_compile_loss", None)
    return getattr(compiled, "_user_loss_weights", None)


def _one_weight(given, where: str) -> float | None:
    """The loss weight of a model with one output: a number, or one in a list or dict."""
    if isinstance(given, (list, tuple, dict)):
        values = list(given.values()) if isinstance(given, dict) else list(given)
        if len(values) != 1:
            raise UserError(
                f"{where}: compile's loss_weights holds {len(values)} weights, but the model "
                f"has one output; give one weight"
            )
        given = values[0]
    return given


def _scaled(loss: Callable, weight: float | None) -> Callable:
    """`loss` times compile's loss weight of a one-output model, as Keras weights it."""
    if weight is None:
        return loss

    def weighted(y, y_pred) -> tf.Tensor:
        values = loss(y, y_pred)
        return values * tf.cast(weight, values.dtype)

    return weighted


def compiled_metrics(model: keras.Model) -> list:
    """The metrics as the user passed them to `compile`, a flat list."""
    # Keras keeps them as passed only here; there is no public reader, and its
    # serialized form (get_compile_config) loses unregistered functions.
    return _flat(model._compile_metrics._user_metrics if model._compile_metrics else [])


def _flat(metrics) -> list:
    if metrics is None:
        return []
    if isinstance(metrics, dict) or (
        isinstance(metrics, (list, tuple)) and any(isinstance(m, (list, dict)) for m in metrics)
    ):
        raise UserError(
            "metrics per output are not supported: tf_mgpu trains models with one output; "
            "pass metrics=[...] as a flat list"
        )
    return list(metrics)
