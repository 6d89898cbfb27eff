"""Image classification with data augmentation inside the model, as keras.io writes it:
RandomFlip and RandomTranslation layers (active in training only) and Dropout."""

import keras
import numpy as np


def build_model():
    augment = keras.Sequential(
        [keras.layers.RandomFlip("horizontal"), keras.layers.RandomTranslation(0.1, 0.1)]
    )
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            augment,
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 320)
    x = rng.normal(0, 0.5, (320, 16, 16, 3)).astype("float32")
    x[np.arange(320), :, :, y] += 1.0  # the class is the brightest channel
    return (x[:256], y[:256]), (x[256:], y[256:])
