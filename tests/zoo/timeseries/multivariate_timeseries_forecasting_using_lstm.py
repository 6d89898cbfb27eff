# keras-io: examples/timeseries/multivariate_timeseries_forecasting_using_lstm.py
"""Multivariate stock forecasting with stacked LSTMs: synthetic standardized windows of
8 days (win_length cut from 60) of the 5 price features with the next opening price as
target, in place of the GOOG CSV and `TimeseriesGenerator` (not in Keras 3); LSTM widths
cut from 128/128/64 to 16/16/8; `keras.Input` in place of `input_shape=`,
`LeakyReLU(negative_slope=0.5)` in place of `alpha=0.5`, and `keras.losses`,
`keras.optimizers`, `keras.metrics` in place of `tf.losses`, `tf.optimizers`,
`tf.metrics`."""

import keras
import numpy as np

win_length = 8  # window length
num_features = 5


def build_model():
    model = keras.Sequential()
    model.add(keras.Input(shape=(win_length, num_features)))
    model.add(keras.layers.LSTM(16, return_sequences=True))
    model.add(keras.layers.LeakyReLU(negative_slope=0.5))
    model.add(keras.layers.LSTM(16, return_sequences=True))
    model.add(keras.layers.LeakyReLU(negative_slope=0.5))
    model.add(keras.layers.Dropout(0.3))
    model.add(keras.layers.LSTM(8, return_sequences=False))
    model.add(keras.layers.Dropout(0.3))
    model.add(keras.layers.Dense(1))

    model.compile(
        loss=keras.losses.MeanSquaredError(),
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.MeanAbsoluteError()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        # A standardized random walk; each window predicts the next day's "Open".
        steps = rng.normal(size=(n + win_length, 1)) * 0.1
        prices = np.cumsum(steps, axis=0) + rng.normal(size=(n + win_length, num_features)) * 0.01
        features = (prices - prices.mean(axis=0)) / prices.std(axis=0)
        x = np.stack([features[i : i + win_length] for i in range(n)])
        y = features[win_length : win_length + n, 0]
        return x, y

    return split(128), split(64)
