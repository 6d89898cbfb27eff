# keras-io: examples/vision/metric_learning_similarity.py
"""Metric learning with a multi-similarity loss on CIFAR-10: synthetic 32x32x3 float32
images in [0, 255] with int labels over 10 classes in place of the CIFAR-10 download and
its class-balanced PyDataset sampler (batches of 5 classes x 5 examples; here plain
batches); convolution widths 16/32/64/64 in place of 64/128/256/256 and embedding_size
32 in place of 256; MultiSimilarityLoss registered under this file's package."""

import keras
import numpy as np
from keras import layers, ops

embedding_size = 32
learning_rate = 0.002


@keras.saving.register_keras_serializable(package="zoo_metric_learning_similarity")
class MultiSimilarityLoss(keras.losses.Loss):
    def __init__(self, alpha=2.0, beta=40.0, base=0.5, **kwargs):
        super().__init__(**kwargs)
        self.alpha, self.beta, self.base = alpha, beta, base

    def call(self, y_true, y_pred):
        sim_mat = ops.matmul(y_pred, ops.transpose(y_pred))
        y_true = ops.reshape(y_true, [-1, 1])
        adj = ops.cast(ops.equal(y_true, ops.transpose(y_true)), "float32")
        mask = 1.0 - ops.eye(ops.shape(y_true)[0])
        pos_m, neg_m = adj * mask, (1.0 - adj) * mask
        pos_l = (1.0 / self.alpha) * ops.log(
            1.0 + ops.sum(ops.exp(-self.alpha * (sim_mat - self.base)) * pos_m, axis=1)
        )
        neg_l = (1.0 / self.beta) * ops.log(
            1.0 + ops.sum(ops.exp(self.beta * (sim_mat - self.base)) * neg_m, axis=1)
        )
        return ops.mean(pos_l + neg_l)


def build_model():
    inputs = keras.layers.Input((32, 32, 3))
    x = keras.layers.Rescaling(scale=1.0 / 255)(inputs)
    x = keras.layers.Conv2D(16, 3, activation="relu")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Conv2D(32, 3, activation="relu")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPool2D((4, 4))(x)
    x = keras.layers.Conv2D(64, 3, activation="relu")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Conv2D(64, 3, activation="relu")(x)
    x = keras.layers.GlobalMaxPool2D()(x)

    # MetricEmbedding logic: Dense projection followed by L2 Normalization
    x = layers.Dense(embedding_size)(x)
    outputs = layers.UnitNormalization(axis=1)(x)

    # building model
    model = keras.Model(inputs, outputs)

    # init similarity loss
    loss = MultiSimilarityLoss()

    # compiling and training
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=loss,
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 32, 32, 3)).astype("float32")
        y = rng.integers(0, 10, size=n)
        return x, y

    return split(128), split(64)
