"""A recurrent regression as keras.io writes one for time series: a GRU over windows of a
noisy signal predicts the next value."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential([keras.Input((12, 2)), keras.layers.GRU(16), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", metrics=["mae"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    t = np.arange(400 + 13, dtype="float32")
    signal = np.stack([np.sin(t / 5), np.cos(t / 7)], axis=1) + rng.normal(0, 0.1, (len(t), 2))
    x = np.stack([signal[i : i + 12] for i in range(400)]).astype("float32")
    y = signal[12:412, :1].astype("float32")
    return (x[:320], y[:320]), (x[320:], y[320:])
