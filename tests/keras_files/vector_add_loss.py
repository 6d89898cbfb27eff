"""A layer that adds a penalty of one value per unit with `self.add_loss`, which Keras sums
into the loss (the "Making new layers and models via subclassing" guide's pattern with a
vector)."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="vector_add_loss")
class UnitPenalty(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * ops.mean(ops.square(inputs), axis=0))
        return inputs


def build_model():
    inputs = keras.Input((6,))
    hidden = UnitPenalty()(keras.layers.Dense(4, activation="tanh")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 6)).astype("float32")
    y = (x @ rng.normal(size=(6, 1))).astype("float32")
    return (x[:128], y[:128]), (x[128:], y[128:])
