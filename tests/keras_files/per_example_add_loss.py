"""A model whose last layer adds a loss of one value per example, as keras.io's OCR examples
add Keras's `ctc_batch_cost` (shape (batch, 1)) with `self.add_loss`: Keras sums it over the
batch. Compiled with an optimizer only: the added loss is the loss."""

import keras
import numpy as np
from keras import layers, ops


@keras.saving.register_keras_serializable(package="per_example_add_loss")
class SquaredErrorLayer(layers.Layer):
    def call(self, y_true, y_pred):
        self.add_loss(ops.sum(ops.square(y_true - y_pred), axis=-1, keepdims=True))
        return y_pred


def build_model():
    x = keras.Input((6,), name="x")
    target = keras.Input((2,), name="target")
    h = layers.Dense(8, activation="tanh")(x)
    y_pred = SquaredErrorLayer()(target, layers.Dense(2)(h))
    model = keras.Model([x, target], y_pred)
    model.compile(optimizer=keras.optimizers.SGD(2e-3))
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 6))
    target = np.stack([np.sin(x[:, 0]), x[:, 1] * x[:, 2]], axis=1)
    return ([x[:128], target[:128]], None), ([x[128:], target[128:]], None)
