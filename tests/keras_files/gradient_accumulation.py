"""SGD with momentum that accumulates the gradients of 4 batches before each update
(`gradient_accumulation_steps`), as Keras documents it: one update per 4 batches, with
their mean gradient."""

import keras
import numpy as np

ACCUMULATE = 4  # None: apply every batch


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(
            0.1, momentum=0.9, gradient_accumulation_steps=ACCUMULATE or None
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
