"""A TensorFlow object made when the file is imported, as keras.io's custom train step
examples do with their metric trackers and loss objects."""

import keras
import numpy as np
import tensorflow as tf

STEP_PENALTY = tf.constant(1e-4)  # runs a TensorFlow op at import time
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=LOSS, metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
