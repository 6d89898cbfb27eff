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

A model with several outputs (see `tf_mgpu.engine.heads`) has one loss per
output: each example's loss is the sum over outputs of the output's loss
weight times its per-example loss, so the reduction above stays exact. Each
output's loss is reported too, as Keras reports it (`price_loss`: times the
sample weights, not the loss weight), and each output's metrics are named
`<output>_<metric>`.

compile's `weighted_metrics` are metrics like the others, marked
`metrics.Weighted`: `metrics.Sums` updates them with the sample weights as
well as the padding weights. They are named as Keras names them: after every
unweighted metric, and `weighted_<name>` when their name is taken.
"""

import dataclasses
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine import heads
from tf_mgpu.engine.metrics import OfOutput, Weighted
from tf_mgpu.engine.per_example import is_sparse_categorical, loss_function, metric_function
from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True)
class OutputLoss:
    """The loss of one output of several: `loss(y, y_pred)` takes the whole labels and
    predictions and returns that output's per-example loss; `weight` is compile's
    `loss_weights` entry (None: 1). `name` is Keras's: `<output>_loss`."""

    name: str
    loss: Callable[[object, object], tf.Tensor]
    weight: float | None


@dataclasses.dataclass(frozen=True)
class Objective:
    """`loss(y, y_pred)` and each `metrics[name](y, y_pred)` return one value per example;
    a stateful Keras metric (AUC, Precision...) stands as itself (see `metrics.Sums`), or
    as a `metrics.OfOutput` when it measures one output of several. A metric of compile's
    `weighted_metrics` is any of these in a `metrics.Weighted`, after the others.

    `sparse_classes`: for a sparse categorical loss, how many classes the model
    outputs (labels must lie below it); for several outputs a dict from each
    `heads.Head` with such a loss to its classes; None otherwise.
    `outputs`: for a model with several outputs, each output's loss; `loss`
    is then their weighted sum.
    """

    loss: Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
    metrics: dict[str, Callable | keras.metrics.Metric | OfOutput | Weighted]
    sparse_classes: int | dict | None = None
    outputs: tuple[OutputLoss, ...] = ()

    @property
    def output_losses(self) -> tuple[str, ...]:
        """The names of the outputs' own losses (`price_loss`...), none for one output."""
        return tuple(output.name for output in self.outputs)

    @property
    def reported(self) -> list[str]:
        """Every value reported besides the loss: each output's loss, then every metric."""
        return [*self.output_losses, *self.metrics]

    def per_example(self, y, y_pred, w=None) -> tuple[tf.Tensor, dict | None]:
        """Each example's loss, times its sample weight `w` if any; and for several outputs,
        each output's (times `w`, not its loss weight), keyed by `output_losses`, else None."""
        if not self.outputs:
            return _weighted(self.loss(y, y_pred), w), None
        parts = {output.name: _weighted(output.loss(y, y_pred), w) for output in self.outputs}
        return _weighted_sum(parts, self.outputs), parts


def _weighted(per_example: tf.Tensor, w) -> tf.Tensor:
    """Each example's loss times its sample weight (Keras's `sample_weight`), if any."""
    return per_example if w is None else per_example * tf.cast(w, per_example.dtype)


def _weighted_sum(parts: dict, outputs: tuple[OutputLoss, ...]) -> tf.Tensor:
    """Σ over outputs of loss weight x per-example loss, as Keras's CompileLoss adds them."""
    dtype = parts[outputs[0].name].dtype
    terms = [
        tf.cast(parts[o.name], dtype) * (1.0 if o.weight is None else o.weight) for o in outputs
    ]
    return tf.add_n(terms)


def from_compiled(model: keras.Model, y, y_pred, where: str) -> Objective:
    """The objective `model.compile` set. `y` are the labels of a few examples and `y_pred`
    the model's outputs on them: their shapes choose what 'accuracy' means, as Keras
    chooses from the first batch, and they must fit each other (several outputs).

    `where` names the task in the errors, which are one line each.
    """
    if not getattr(model, "compiled", False) or model.loss is None:
        raise UserError(
            f"{where}: build_model() returned a model that is not compiled with a loss; "
            f"call model.compile(optimizer=..., loss=..., metrics=[...]) before returning it"
        )
    found = heads.of_model(model, y, y_pred, where)
    if found is not None:
        return _several(model, found, y, y_pred, where)
    if isinstance(model.loss, (list, tuple, dict)):
        raise UserError(
            f"{where}: the model is compiled with several losses but has one output; "
            f"compile it with one loss"
        )
    y_pred_shape = tuple(y_pred.shape[1:]) if isinstance(y_pred, tf.Tensor) else None
    loss = _scaled(loss_function(model.loss), _one_weight(loss_weights(model), where))
    chosen = [
        (None, _flat(given, what=what), weighted)
        for given, what, weighted in (
            (user_metrics(model), "metrics", False),
            (user_weighted_metrics(model), "weighted_metrics", True),
        )
    ]
    metrics = _measured(chosen, y, y_pred)
    sparse = is_sparse_categorical(model.loss) and y_pred_shape
    return Objective(
        loss=loss, metrics=metrics, sparse_classes=y_pred_shape[-1] if sparse else None
    )


def _several(model: keras.Model, found: tuple, y, y_pred, where: str) -> Objective:
    """The objective of a model with several outputs, `found` (see `heads.of_model`)."""
    losses = heads.spread(model.loss, found, "loss", where)
    weights = loss_weights(model)
    weights = (
        [None] * len(found)
        if weights is None
        else heads.spread(weights, found, "loss_weights", where)
    )
    chosen = []  # Keras's order: every output's metrics, then every output's weighted ones
    for what, user in (
        ("metrics", user_metrics(model)),
        ("weighted_metrics", user_weighted_metrics(model)),
    ):
        per_output = (
            heads.spread(user, found, what, where, some=True) if user else [None] * len(found)
        )
        chosen += [
            (head, _flat(one, several=True), what != "metrics")
            for head, one in zip(found, per_output, strict=True)
        ]
    outputs, sparse = [], {}
    for head, given, weight in zip(found, losses, weights, strict=True):
        if given is None:
            raise UserError(
                f"{where}: compile's loss gives output {head.name!r} no loss; tf_mgpu trains "
                f"every output with a loss: give it one, or build the model without it"
            )
        outputs.append(OutputLoss(f"{head.name}_loss", _on(head, loss_function(given)), weight))
        if is_sparse_categorical(given):
            sparse[head] = head.of(y_pred).shape[-1]
    outputs = tuple(outputs)
    measured = _measured(chosen, y, y_pred)

    def total(y, y_pred) -> tf.Tensor:
        return _weighted_sum({o.name: o.loss(y, y_pred) for o in outputs}, outputs)

    return Objective(total, measured, sparse or None, outputs)


def _measured(chosen: list, y, y_pred) -> dict:
    """Each metric of `chosen`, (head or None for a one-output model, its metrics as
    given, whether weighted), keyed by its name as Keras names it (see `heads.named`)."""
    measured, taken = {}, {}
    for head, given, weighted in chosen:
        labels, output = (y, y_pred) if head is None else head.pick(y, y_pred)
        y_shape = tuple(np.shape(labels)[1:])
        known = head is not None or isinstance(output, tf.Tensor)
        y_pred_shape = tuple(output.shape[1:]) if known else None
        for one in given:
            name, fn = metric_function(one, y_shape, y_pred_shape)
            key = heads.named(head and head.name, name, taken, weighted=weighted)
            if head is not None:
                fn = OfOutput(fn, head.pick) if _stateful(fn) else _on(head, fn)
            measured[key] = Weighted(fn) if weighted else fn
    return measured


def _on(head: heads.Head, fn: Callable) -> Callable:
    """`fn` (y, y_pred) applied to the labels and prediction of one output, `head`."""

    def of_head(y, y_pred) -> tf.Tensor:
        return fn(*head.pick(y, y_pred))

    return of_head


def _stateful(metric) -> bool:
    return isinstance(metric, keras.metrics.Metric)


def loss_weights(model: keras.Model):
    """compile's `loss_weights` as given (None, a number, a list or a dict)."""
    return internals.compiled_loss_weights(model)


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


def user_metrics(model: keras.Model):
    """The metrics exactly as the user passed them to `compile` (None, a list, a dict...)."""
    return internals.compiled_metrics(model)[0]


def user_weighted_metrics(model: keras.Model):
    """compile's `weighted_metrics` exactly as passed."""
    return internals.compiled_metrics(model)[1]


def _flat(metrics, several: bool = False, what: str = "metrics") -> list:
    """One output's metrics as a list: for one of several outputs, Keras takes a single
    metric as a list of it."""
    if metrics is None:
        return []
    if several and not isinstance(metrics, (list, tuple)):
        return [metrics]
    if isinstance(metrics, dict) or (
        isinstance(metrics, (list, tuple)) and any(isinstance(m, (list, dict)) for m in metrics)
    ):
        raise UserError(
            f"{what} per output are given for a model with one output; pass {what}=[...] "
            f"as a flat list"
        )
    return list(metrics)
