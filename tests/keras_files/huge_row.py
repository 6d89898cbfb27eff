"""A regression whose training split holds one huge (finite) row: its squared error
overflows float32 and float16 alike, so the step that reads it has a non-finite loss on
the one replica that holds it. A user's bad data, as it arrives."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(576 + 128, 8)).astype("float32")
    y = x @ rng.normal(size=(8, 1)).astype("float32")
    x[100] = 1e20
    return (x[:576], y[:576]), (x[576:], y[576:])
