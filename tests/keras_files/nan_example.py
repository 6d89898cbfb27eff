"""A training split whose example 700 holds a NaN, as a reader with a bug would return it.

READ_AS (the environment variable, or this module's constant) says how load_data() returns
it: "source", an object read by index (`__len__` and `__getitem__`); "dataset", a tf.data
dataset whose length TensorFlow knows; "unknown_length", that dataset filtered, so that its
length is unknown until it is read. BAD_EXAMPLE=none leaves every example finite."""

import os

import keras
import numpy as np
import tensorflow as tf

READ_AS = os.environ.get("READ_AS", "source")
BAD_EXAMPLE = os.environ.get("BAD_EXAMPLE", "700")


class Reader:
    """Examples read one at a time by index, as from files."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def _examples(count, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, 8)).astype("float32")
    y = (x @ np.random.default_rng(0).normal(size=(8, 3))).argmax(1)
    return x, y


def build_model():
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    x, y = _examples(2048, 1)
    if BAD_EXAMPLE != "none":
        x[int(BAD_EXAMPLE), 3] = np.nan
    test = _examples(256, 2)
    if READ_AS == "source":
        return Reader(x, y), test
    train = tf.data.Dataset.from_tensor_slices((x, y))
    if READ_AS == "unknown_length":
        train = train.filter(lambda x, y: True)
    return train, test
