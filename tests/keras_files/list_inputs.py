"""A functional model with two inputs, given to fit as a list, as keras.io's multi-input
examples pass them: `model.fit([titles, bodies], y)`."""

import keras
import numpy as np


def build_model():
    title = keras.Input((6,), name="title")
    body = keras.Input((10,), name="body")
    x = keras.layers.concatenate([keras.layers.Dense(8)(title), keras.layers.Dense(8)(body)])
    outputs = keras.layers.Dense(3)(x)
    model = keras.Model([title, body], outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    titles = rng.normal(size=(192, 6)).astype("float32")
    bodies = rng.normal(size=(192, 10)).astype("float32")
    y = (titles[:, 0] + bodies[:, 0] > 0).astype("int64") + (bodies[:, 1] > 1)
    return ([titles[:128], bodies[:128]], y[:128]), ([titles[128:], bodies[128:]], y[128:])
