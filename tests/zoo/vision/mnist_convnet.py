# keras-io: examples/vision/mnist_convnet.py
"""Simple MNIST convnet: synthetic 28x28x1 float images in [0, 1] with one-hot labels over
10 classes in place of the MNIST download."""

import keras
import numpy as np
from keras import layers

# Model / data parameters
num_classes = 10
input_shape = (28, 28, 1)


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(num_classes, activation="softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 28, 28, 1)).astype("float32") / 255
        y = keras.utils.to_categorical(rng.integers(0, num_classes, size=n), num_classes)
        return x, y

    return split(128), split(64)
