"""The loss and the compiled metrics summed on every replica, read as totals over the cluster."""

from collections.abc import Callable

import tensorflow as tf


class Sums:
    """Running sums of the per-example loss, of each metric, and of the examples.

    Each replica adds to its own copy with no communication in the step; a
    read sums the copies of every replica on every worker (SyncOnRead, SUM),
    in float64, so a mean over any number of replicas is exact. Create it
    inside `strategy.scope()`. `reset` touches only local copies; under
    MultiWorkerMirroredStrategy `result` and `totals` are collective, so
    every worker must call them at the same point.

    `metrics` maps each metric's name to its per-example function (y, y_pred).
    """

    def __init__(self, name: str, metrics: dict[str, Callable]):
        self._metrics = dict(metrics)
        # The order (loss, metrics..., count) is the checkpoint's: keep it.
        keys = ("loss", *self._metrics, "count")
        self._sums = {
            key: tf.Variable(
                0.0,
                dtype=tf.float64,
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
                name=f"{name}_{key}",
            )
            for key in keys
        }

    def update(
        self,
        per_example_loss: tf.Tensor,
        y: tf.Tensor,
        y_pred: tf.Tensor,
        weights: tf.Tensor | None = None,
    ) -> None:
        """Adds one replica's batch; examples of weight 0 (padding) count for nothing."""
        if weights is None:
            weights = tf.ones_like(per_example_loss, dtype=tf.float64)
        weights = tf.cast(weights, tf.float64)
        values = {"loss": per_example_loss}
        values.update({name: fn(y, y_pred) for name, fn in self._metrics.items()})
        for key, value in values.items():
            self._sums[key].assign_add(tf.reduce_sum(tf.cast(value, tf.float64) * weights))
        self._sums["count"].assign_add(tf.reduce_sum(weights))

    def variables(self) -> list[tf.Variable]:
        return list(self._sums.values())

    def reset(self) -> None:
        for total in self._sums.values():
            total.assign(0.0)

    def totals(self) -> tuple[float, float]:
        """(summed loss, examples) over every replica; collective like `result`."""
        return float(self._sums["loss"].numpy()), float(self._sums["count"].numpy())

    def result(self) -> dict[str, float]:
        """The mean loss and mean of each metric, and the number of examples, over every replica."""
        totals = {key: float(total.numpy()) for key, total in self._sums.items()}
        count = totals.pop("count")
        return {**{key: total / count for key, total in totals.items()}, "examples": int(count)}


def prefixed(split: str, result: dict) -> dict:
    """`result` keyed as the summary and metrics.jsonl name it: train_loss, test_accuracy, ..."""
    return {f"{split}_{key}": value for key, value in result.items()}


class KerasMetrics:
    """The training metrics of a model that trains with its own `train_step`, read as `Sums`.

    That step updates the model's own Keras metrics (`model.metrics`): state
    variables that sync on read, so a read outside the replicas sums every
    replica's (collective under MultiWorkerMirroredStrategy, as `Sums`). The
    examples are counted here, since a step may weight its metrics otherwise.
    """

    def __init__(self, model):
        self._model = model
        self._count = tf.Variable(
            0.0,
            dtype=tf.float64,
            trainable=False,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
            name="train_count",
        )

    def count(self, examples: tf.Tensor) -> None:
        """Adds one replica's batch of `examples` examples; called in the replica step."""
        self._count.assign_add(tf.cast(examples, tf.float64))

    def variables(self) -> list:
        return [self._count, *self._model.metrics_variables]

    def reset(self) -> None:
        self._count.assign(0.0)
        self._model.reset_metrics()

    def totals(self) -> tuple[float, float]:
        """(mean loss x examples, examples): what `Sums.totals` gives, from the step's
        own loss tracker (a metric named 'loss'); NaN loss when the step keeps none."""
        count = float(self._count.numpy())
        return self._loss() * count, count

    def result(self) -> dict[str, float]:
        values = {
            name: float(value)
            for name, value in self._model.get_metrics_result().items()
            if tf.size(value) == 1
        }
        return {**values, "examples": int(self._count.numpy())}

    def _loss(self) -> float:
        found = [m for m in self._model.metrics if m.name == "loss"]
        return float(found[0].result()) if found else float("nan")
