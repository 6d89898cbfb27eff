# keras-io: examples/vision/fgsm.py
"""The modified LeNet the example trains before its FGSM attack, on synthetic
MNIST-shaped data (28x28x1 floats in [0, 1], uint8 labels 0-9); the attack itself is
inference and is not part of the task."""

import keras
import numpy as np
from keras import layers


def build_model():
    input = keras.Input((28, 28, 1))
    x = layers.Conv2D(32, 3, strides=1, activation="relu")(input)
    x = layers.Conv2D(64, 3, strides=1, activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Dropout(0.25)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(10, activation="softmax")(x)

    model = keras.Model(inputs=input, outputs=output)

    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, (n, 28, 28)).astype("float32") / 255
        images = images.reshape((*images.shape, 1))
        labels = rng.integers(0, 10, (n,)).astype("uint8")
        return images, labels

    return split(128), split(64)
