"""A convnet on 128x128 colour images: a step of about a second on one CPU core.

As a real model's step on a GPU is slow, this one is slow on a CPU: larger
images and more filters than MNIST's convnet, nothing else. Synthetic data:
noise images whose label is the brightest of ten image regions, so the
model has something to learn.
"""

import keras
import numpy as np

SIZE = 128
TRAIN, TEST = 512, 128


def build_model():
    model = keras.Sequential(
        [
            keras.Input((SIZE, SIZE, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.05),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.random((TRAIN + TEST, SIZE, SIZE, 3), dtype=np.float32)
    regions = x[:, :, : SIZE // 10 * 10, 0].reshape(len(x), SIZE, 10, -1).mean(axis=(1, 3))
    y = regions.argmax(axis=1)
    return (x[:TRAIN], y[:TRAIN]), (x[TRAIN:], y[TRAIN:])
