"""Inputs standardised by a `keras.layers.Normalization` adapted to the training data in
build_model, as keras.io's structured-data examples do: its mean, variance and count
(an int64) are weights of the model, set by adapt() and never trained."""

import keras
import numpy as np


def load_data():
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.5, 20.0, size=16)
    x = (rng.normal(size=(1280, 16)) * scale + rng.normal(size=16) * 10).astype("float32")
    y = ((x - x.mean(0)) / scale @ rng.normal(size=(16, 3)) + rng.normal(size=(1280, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])


def build_model():
    (x_train, _), _ = load_data()
    normalizer = keras.layers.Normalization()
    normalizer.adapt(x_train)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            normalizer,
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
