"""Metrics of the user's own, written as keras.io writes them ("Training & evaluation with
the built-in methods"): a count of correct predictions whose `result()` returns its state
variable itself, a mean of the user's own whose `result()` computes a tensor, and a largest
value, whose state is not a sum."""

import keras
import numpy as np
from keras import ops

LEARNING_RATE = 0.2


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(ops.reshape(y_true, (-1, 1)), "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(ops.reshape(sample_weight, (-1, 1)), "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


class MeanSquaredLogit(keras.metrics.Metric):
    """The mean of the squared largest logit: a total and a count, divided in result()."""

    def __init__(self, name="mean_squared_logit", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), name="total", initializer="zeros")
        self.count = self.add_variable(shape=(), name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = ops.square(ops.max(y_pred, axis=1))
        self.total.assign_add(ops.cast(ops.sum(values), self.dtype))
        self.count.assign_add(ops.cast(ops.shape(values)[0], self.dtype))

    def result(self):
        return self.total / self.count


class LargestLoss(keras.metrics.Metric):
    """The largest per-example loss seen: a state that is a maximum, not a sum."""

    def __init__(self, name="largest_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.largest = self.add_variable(shape=(), name="largest", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        losses = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        self.largest.assign(ops.maximum(self.largest, ops.cast(ops.max(losses), self.dtype)))

    def result(self):
        return self.largest


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy", CategoricalTruePositives(), MeanSquaredLogit(), LargestLoss()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3)) + rng.normal(size=(1280, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
