"""A loss class that computes in `__call__` itself, not in `call`, as keras.io's supervised
contrastive learning writes its SupervisedContrastiveLoss: it returns the batch's mean."""

import keras
import numpy as np
from keras import layers, ops


@keras.saving.register_keras_serializable(package="loss_in_dunder_call")
class MeanSquared(keras.losses.Loss):
    def __call__(self, y_true, y_pred, sample_weight=None):
        return ops.mean(ops.square(ops.cast(y_true, y_pred.dtype) - y_pred))


def build_model():
    model = keras.Sequential(
        [keras.Input((5,)), layers.Dense(8, activation="tanh"), layers.Dense(2)]
    )
    model.compile(optimizer="sgd", loss=MeanSquared())
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 5))
    y = np.stack([np.sin(x[:, 0]), x[:, 1] * x[:, 2]], axis=1)
    return (x[:128], y[:128]), (x[128:], y[128:])
