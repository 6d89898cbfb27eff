"""A small `keras.applications` model trained from scratch (weights=None), as keras.io's
transfer-learning guides build one: MobileNetV3Small on 32x32 colour images, 4 classes."""

import keras
import numpy as np


def build_model():
    model = keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), weights=None, classes=4, include_preprocessing=False
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 160)
    x = rng.normal(0, 0.5, (160, 32, 32, 3)).astype("float32")
    for i, label in enumerate(y):  # the class is how many rows are brighter
        x[i, : 8 * (label + 1), :, 0] += 1.0
    return (x[:128], y[:128]), (x[128:], y[128:])
