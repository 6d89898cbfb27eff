"""A `keras.layers.Lambda` in a Sequential model, as keras.io's examples write one: a Python
lambda that puts the squares of the features beside them (NAMED: the same function
defined with def, `Lambda(with_squares)`)."""

import keras
import numpy as np
from keras import ops

NAMED = False


def with_squares(x):
    return ops.concatenate([x, ops.square(x)], axis=-1)


def build_model():
    function = with_squares if NAMED else lambda x: ops.concatenate([x, ops.square(x)], axis=-1)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Lambda(function),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x**2 @ rng.normal(size=(16, 3)) + x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
