"""Regularisation as keras.io writes it: an L2 kernel regularizer, and a layer of the user's
own that adds an activity penalty with `self.add_loss` (the "Making new layers and models
via subclassing" guide)."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="zoo")
class ActivityPenalty(keras.layers.Layer):
    def __init__(self, rate=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(ops.square(inputs)))
        return inputs

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}


def build_model():
    inputs = keras.Input((10,))
    hidden = keras.layers.Dense(
        32, activation="relu", kernel_regularizer=keras.regularizers.L2(1e-3)
    )(inputs)
    hidden = ActivityPenalty(1e-2)(hidden)
    outputs = keras.layers.Dense(2)(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(320, 10)).astype("float32")
    y = (x[:, :3].sum(1) > 0).astype("int64")
    return (x[:256], y[:256]), (x[256:], y[256:])
