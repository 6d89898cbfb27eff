"""A tf.data pipeline that shuffles without a seed, as keras.io's input pipelines often do
(`dataset.shuffle(buffer)`), and a metric that tells whether an epoch read every example once:
the mean of the example ids, exactly 511.5 when each of the 1024 ids is read once."""

import keras
import numpy as np
import tensorflow as tf

EXAMPLES = 1024


def ids_seen(y_true, y_pred):
    return y_true[:, 1]  # column 1 of the labels is the example's id


def build_model():
    inputs = keras.Input((8,))
    outputs = keras.layers.Dense(2)(inputs)
    model = keras.Model(inputs, outputs)

    def loss(y_true, y_pred):
        return keras.ops.square(y_true[:, 0] - y_pred[:, 0])

    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss=loss,
        metrics=[keras.metrics.MeanMetricWrapper(ids_seen, name="mean_id")],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES + 64, 8)).astype("float32")
    target = x @ rng.normal(size=(8,)).astype("float32")
    y = np.stack([target, np.arange(EXAMPLES + 64, dtype="float32")], axis=1)
    train = tf.data.Dataset.from_tensor_slices((x[:EXAMPLES], y[:EXAMPLES])).shuffle(256)
    test = tf.data.Dataset.from_tensor_slices((x[EXAMPLES:], y[EXAMPLES:]))
    return train, test
