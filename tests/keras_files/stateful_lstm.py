"""A stateful LSTM, as keras.io's older time-series examples build it: a fixed batch size and
`stateful=True`, its state carried from one batch to the next."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [
            keras.Input((5, 2), batch_size=16),
            keras.layers.LSTM(4, stateful=True),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer="adam", loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 5, 2)).astype("float32")
    y = x.sum(axis=(1, 2))[:, None]
    return (x[:64], y[:64]), (x[64:], y[64:])
