# keras-io: examples/structured_data/regression_boston_housing.py
"""Regression on Boston Housing: synthetic float features (13 per house) and prices in
5-50 in place of `keras.datasets.boston_housing`; the EarlyStopping callback is given by
`callbacks()`. A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

num_features = 13


def build_model():
    model = keras.Sequential(
        [
            # input_shape is number of features
            keras.Input(shape=(num_features,)),
            layers.Dense(32, activation="relu"),
            layers.Dense(32, activation="relu"),
            layers.Dense(1),
        ]
    )

    # The loss function is mean squared error
    # The metrics is Mean Absolute Error and Mean Squared Error
    model.compile(loss="mse", optimizer="adam", metrics=["mae", "mse"])
    return model


def callbacks():
    # Use early stopping to break the training if the val_loss doesn't changed in 10 epochs
    return [keras.callbacks.EarlyStopping(monitor="val_loss", patience=10)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.uniform(0.0, 100.0, size=(n, num_features)).astype("float32")
        y = rng.uniform(5.0, 50.0, size=(n,)).astype("float32")
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
