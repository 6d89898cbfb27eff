# keras-io: examples/vision/alexnet.py
"""AlexNet on CIFAR-10: synthetic float32 images in [0, 1] with integer labels 0-9 of shape
(n, 1) in place of the CIFAR-10 download resized to 227x227; images 67x67 (the smallest side
the three valid 3x3/2 poolings allow), filters cut from 96/256/384/384/256 to 8/16/16/16/16
and the Dense widths from 4096 to 32."""

import numpy as np
from tensorflow import keras

IMAGE_SIZE = 67  # image size expected by alexnet model
NUM_CLASSES = 10
LEARNING_RATE = 0.001


def get_training_model():
    model = keras.Sequential(
        [
            keras.layers.Conv2D(
                filters=8,
                kernel_size=(11, 11),
                strides=(4, 4),
                activation="relu",
                input_shape=(IMAGE_SIZE, IMAGE_SIZE, 3),
            ),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPool2D(pool_size=(3, 3), strides=(2, 2)),
            keras.layers.Conv2D(
                filters=16,
                kernel_size=(5, 5),
                strides=(1, 1),
                activation="relu",
                padding="same",
            ),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPool2D(pool_size=(3, 3), strides=(2, 2)),
            keras.layers.Conv2D(
                filters=16,
                kernel_size=(3, 3),
                strides=(1, 1),
                activation="relu",
                padding="same",
            ),
            keras.layers.BatchNormalization(),
            keras.layers.Conv2D(
                filters=16,
                kernel_size=(3, 3),
                strides=(1, 1),
                activation="relu",
                padding="same",
            ),
            keras.layers.BatchNormalization(),
            keras.layers.Conv2D(
                filters=16,
                kernel_size=(3, 3),
                strides=(1, 1),
                activation="relu",
                padding="same",
            ),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPool2D(pool_size=(3, 3), strides=(2, 2)),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(NUM_CLASSES, activation="softmax"),
        ]
    )
    return model


def build_model():
    model = get_training_model()
    optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    model.compile(loss=loss_fn, optimizer=optimizer, metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.random((n, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.float32)
        y = rng.integers(0, NUM_CLASSES, size=(n, 1)).astype("uint8")
        return x, y

    return split(128), split(64)
