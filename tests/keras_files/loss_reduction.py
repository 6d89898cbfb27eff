"""A loss compiled with a reduction of its own: `REDUCTION` is Keras's `reduction=` argument
("sum_over_batch_size", the default, "sum" or "none")."""

import keras
import numpy as np

REDUCTION = "sum_over_batch_size"


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        # A sum over a batch of 32 steps 32x as far as the mean: the rate is 32x smaller.
        optimizer=keras.optimizers.SGD(0.1 if REDUCTION == "sum_over_batch_size" else 0.1 / 32),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=REDUCTION),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
