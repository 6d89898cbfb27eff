# keras-io: examples/timeseries/timeseries_forecasting_with_lstm_for_temperature_prediction.py
"""Next-day temperature forecasting with an LSTM: synthetic windows of 10 days of
(TempAvgF, month, day) with the temperature 10 days ahead as target, in place of the
Austin weather CSV and `timeseries_dataset_from_array`."""

import keras
import numpy as np
from keras import layers

sequence_length = 10
num_features = 3


def build_model():
    model = keras.Sequential(
        [
            layers.Input(shape=(sequence_length, num_features)),
            # Uncomment below line if you want to use intermediate layers.
            # layers.LSTM(20, return_sequences=True),
            layers.LSTM(20, return_sequences=False),
            layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        temp = rng.uniform(30.0, 95.0, size=(n, sequence_length))
        month = np.repeat(rng.integers(1, 13, size=(n, 1)), sequence_length, axis=1)
        day = (rng.integers(1, 20, size=(n, 1)) + np.arange(sequence_length)) % 31 + 1
        x = np.stack([temp, month, day], axis=-1).astype("float64")
        y = rng.uniform(30.0, 95.0, size=(n,))
        return x, y

    return split(128), split(64)
