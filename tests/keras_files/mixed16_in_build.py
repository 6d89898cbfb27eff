"""mixed_float16 set inside build_model: Keras's compile wraps SGD in a LossScaleOptimizer."""

import keras
import numpy as np


def build_model():
    keras.config.set_dtype_policy("mixed_float16")
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3),
            keras.layers.Activation("softmax", dtype="float32"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
