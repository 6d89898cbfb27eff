"""A small convnet with BatchNormalization as keras.io builds them (unsynchronized, the
default): each replica normalises its own share and updates its own moving statistics."""

import keras
import numpy as np
from keras import layers


def build_model():
    inputs = keras.Input((12, 12, 1))
    x = layers.Conv2D(8, 3, padding="same", use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(3)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 12, 12, 1)).astype("float32")
    x[::2] += 1.5  # shares differ, so per-replica statistics would drift apart
    y = (x.mean(axis=(1, 2, 3)) * 3).astype("int64").clip(0, 2)
    return (x[:128], y[:128]), (x[128:], y[128:])
