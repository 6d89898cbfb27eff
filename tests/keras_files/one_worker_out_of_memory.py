"""A model that runs out of memory in training on one worker only (worker 1 by TF_CONFIG), as a
worker on a smaller GPU would: its layer asks, at run time, for a tensor of 4 TB, which no
host's allocator grants (Linux refuses an allocation above its memory and swap)."""

import json
import os

import keras
import numpy as np
import tensorflow as tf


def _worker() -> int | None:
    return json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index")


class Greedy(keras.layers.Layer):
    def call(self, x, training=None):
        if training and _worker() == 1:
            # 2**40 float32, a size known only when the data arrives (nothing to fold)
            rows = tf.cast(tf.abs(x[0, 0]) + 1.0 > 0.0, tf.int64) * 2**36
            return x + tf.reduce_sum(tf.zeros(tf.stack([rows, 16]))) * 0
        return x


def build_model():
    model = keras.Sequential([keras.Input((8,)), Greedy(), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(320, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    return (x[:256], y[:256]), (x[256:], y[256:])
