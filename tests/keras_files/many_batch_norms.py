"""A deep residual network built in a loop, as keras.io's ResNet examples build theirs: each
block has two BatchNormalization layers (keras's default, not synchronized), 52 in all."""

import keras
import numpy as np

BLOCKS = 26


def residual_block(x, units):
    shortcut = x
    x = keras.layers.Dense(units)(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("relu")(x)
    x = keras.layers.Dense(units)(x)
    x = keras.layers.BatchNormalization()(x)
    return keras.layers.Activation("relu")(keras.layers.add([shortcut, x]))


def build_model():
    inputs = keras.Input((16,))
    x = inputs
    for _ in range(BLOCKS):
        x = residual_block(x, 16)
    outputs = keras.layers.Dense(3)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3)) + rng.normal(size=(1280, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
