"""A metric of the user's own whose state is not a sum (the largest absolute logit seen), with
the data as tf.data datasets, as keras.io's "Training & evaluation with the built-in methods"
writes both."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="own_metric_dataset")
class LargestLogit(keras.metrics.Metric):
    def __init__(self, name="largest_logit", **kwargs):
        super().__init__(name=name, **kwargs)
        self.largest = self.add_variable(shape=(), name="largest", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.largest.assign(ops.maximum(self.largest, ops.max(ops.abs(y_pred))))

    def result(self):
        return self.largest

    def reset_state(self):
        self.largest.assign(0.0)


def build_model():
    inputs = keras.Input((8,))
    outputs = keras.layers.Dense(3)(keras.layers.Dense(16, activation="relu")(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy", LargestLogit()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(640, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 3))).argmax(1)
    train = tf.data.Dataset.from_tensor_slices((x[:512], y[:512]))
    test = tf.data.Dataset.from_tensor_slices((x[512:], y[512:]))
    return train, test
