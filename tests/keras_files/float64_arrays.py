"""NumPy arrays of float64 (NumPy's default), given to a model that mixes its inputs with
float32 tensors of its own, as keras.io's GANs concatenate random latent vectors with one-hot
labels: Keras's fit casts the arrays to float32 first, so the concatenation matches."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="float64_arrays")
class WithNoise(keras.layers.Layer):
    def call(self, x):
        return ops.concatenate([x, ops.zeros((ops.shape(x)[0], 2), dtype="float32")], axis=1)


def build_model():
    inputs = keras.Input((6,))
    outputs = keras.layers.Dense(1)(WithNoise()(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 6))  # float64
    y = x @ rng.normal(size=(6, 1))
    return (x[:128], y[:128]), (x[128:], y[128:])
