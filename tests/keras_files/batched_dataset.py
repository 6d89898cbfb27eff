"""tf.data pipelines as keras.io writes them for `fit`: mapped, batched by the user (`BATCH`,
`DROP_REMAINDER`) and prefetched. By 32, the 1000 training examples end in a partial batch
of 8 and the 250 test examples in one of 26."""

import keras
import numpy as np
import tensorflow as tf

BATCH = 32
DROP_REMAINDER = False


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def scale(x, y):
    return x / 2.0, y


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1250, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    train = (
        tf.data.Dataset.from_tensor_slices((x[:1000], y[:1000]))
        .map(scale, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH, drop_remainder=DROP_REMAINDER)
        .prefetch(tf.data.AUTOTUNE)
    )
    test = (
        tf.data.Dataset.from_tensor_slices((x[1000:], y[1000:]))
        .map(scale)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )
    return train, test
