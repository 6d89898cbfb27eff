"""Loss and accuracy summed on every replica, read as totals over the whole cluster."""

import tensorflow as tf

_NAMES = ("loss", "correct", "count")


class Sums:
    """Running sums of per-example loss, correct predictions and examples.

    Each replica adds to its own copy with no communication in the step; a
    read sums the copies of every replica on every worker (SyncOnRead, SUM).
    Create it inside `strategy.scope()`. `reset` touches only local copies;
    under MultiWorkerMirroredStrategy `result` is collective, so every worker
    must call it at the same point.
    """

    def __init__(self, name: str):
        self._sums = {
            key: tf.Variable(
                0.0,
                dtype=tf.float64,
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
                name=f"{name}_{key}",
            )
            for key in _NAMES
        }

    def update(
        self,
        per_example_loss: tf.Tensor,
        logits: tf.Tensor,
        labels: tf.Tensor,
        weights: tf.Tensor | None = None,
    ) -> None:
        """Adds one replica's batch; examples of weight 0 (padding) count for nothing."""
        if weights is None:
            weights = tf.ones_like(per_example_loss)
        weights = tf.cast(weights, tf.float64)
        correct = tf.cast(tf.argmax(logits, axis=-1) == tf.cast(labels, tf.int64), tf.float64)
        loss = tf.cast(per_example_loss, tf.float64)
        self._sums["loss"].assign_add(tf.reduce_sum(loss * weights))
        self._sums["correct"].assign_add(tf.reduce_sum(correct * weights))
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
        """Mean loss, accuracy and the number of examples, over every replica."""
        loss, correct, count = (float(self._sums[key].numpy()) for key in _NAMES)
        return {"loss": loss / count, "accuracy": correct / count, "examples": int(count)}
