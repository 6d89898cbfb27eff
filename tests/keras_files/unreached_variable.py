"""A model with a head no loss reaches: its second output is compiled with loss None, so its
Dense layer's gradient is None, which Keras's optimizer skips. Trained with clipping, whose
gradient tf_mgpu reduces over replicas before the optimizer clips it."""

import keras
import numpy as np


def build_model():
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    main = keras.layers.Dense(1, name="main")(hidden)
    aux = keras.layers.Dense(2, name="aux")(hidden)
    model = keras.Model(inputs, [main, aux])
    model.compile(optimizer=keras.optimizers.SGD(0.05, clipnorm=1.0), loss=["mse", None])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1))).astype("float32")
    return (x[:128], y[:128]), (x[128:], y[128:])
