"""mixed_float16 set at the top of the file, as the Keras mixed precision guide does."""

import keras
import numpy as np

keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3),
            keras.layers.Activation("softmax", dtype="float32"),
        ]
    )
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
