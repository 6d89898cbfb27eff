"""An explicit LossScaleOptimizer around SGD on a float32 model.

Its scale is a power of two, so in float32 it changes nothing: it trains as plain SGD.
"""

import keras
import numpy as np

LOSS_SCALE = True
INITIAL_SCALE = 2.0**15


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    if LOSS_SCALE:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=INITIAL_SCALE)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
