"""Adam following an ExponentialDecay schedule, as the Keras optimizer docs show."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    schedule = keras.optimizers.schedules.ExponentialDecay(
        1e-2, decay_steps=10, decay_rate=0.9, staircase=True
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
