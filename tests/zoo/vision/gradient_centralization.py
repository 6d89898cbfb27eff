# keras-io: examples/vision/gradient_centralization.py
"""The example's CNN compiled with its GCRMSprop optimizer (its "with GC" run) on synthetic
Horses-or-Humans-shaped data: 96x96 images in [0, 1] instead of 300x300 (the smallest
side its five valid 3x3 convolutions and 2x2 poolings allow), int64 labels 0/1. The
augmentation of the example sits in its tf.data pipeline, not in the model, so it is not
part of the synthetic data. GCRMSprop is registered for saving."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers
from keras.optimizers import RMSprop

IMAGE_SIZE = 96


@keras.saving.register_keras_serializable(package="zoo_gradient_centralization")
class GCRMSprop(RMSprop):
    def get_gradients(self, loss, params):
        # We here just provide a modified get_gradients() function since we are
        # trying to just compute the centralized gradients.

        grads = []
        gradients = super().get_gradients()
        for grad in gradients:
            grad_len = len(grad.shape)
            if grad_len > 1:
                axis = list(range(grad_len - 1))
                grad -= tf.reduce_mean(grad, axis=axis, keep_dims=True)
            grads.append(grad)

        return grads


def build_model():
    model = keras.Sequential(
        [
            layers.Conv2D(16, (3, 3), activation="relu", input_shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
            layers.MaxPooling2D(2, 2),
            layers.Conv2D(32, (3, 3), activation="relu"),
            layers.Dropout(0.5),
            layers.MaxPooling2D(2, 2),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.Dropout(0.5),
            layers.MaxPooling2D(2, 2),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.MaxPooling2D(2, 2),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.MaxPooling2D(2, 2),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(512, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    optimizer = GCRMSprop(learning_rate=1e-4)
    model.compile(loss="binary_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, (n, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32")
        x = x * (1.0 / 255)
        y = rng.integers(0, 2, (n,)).astype("int64")
        return x, y

    return split(128), split(64)
