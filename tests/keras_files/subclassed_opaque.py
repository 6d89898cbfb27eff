"""A subclassed keras.Model built from a list of layers: Keras cannot rebuild it from a config."""

import keras
import numpy as np


class Stack(keras.Model):
    def __init__(self, layers):
        super().__init__()
        self.stack = layers

    def call(self, x):
        for layer in self.stack:
            x = layer(x)
        return x


def build_model():
    model = Stack([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)])
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
