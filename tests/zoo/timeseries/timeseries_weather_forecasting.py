# keras-io: examples/timeseries/timeseries_weather_forecasting.py
"""Weather forecasting with an LSTM: synthetic normalized windows of 24 hourly steps (cut
from 120) of the 7 selected Jena climate features, with a normalized temperature target
of shape (n, 1), in place of the Jena climate CSV and `timeseries_dataset_from_array`;
the EarlyStopping callback is given by `callbacks()` (ModelCheckpoint, which writes files,
is left out). A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np

sequence_length = 24
num_features = 7
learning_rate = 0.001


def build_model():
    inputs = keras.layers.Input(shape=(sequence_length, num_features))
    lstm_out = keras.layers.LSTM(32)(inputs)
    outputs = keras.layers.Dense(1)(lstm_out)

    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=learning_rate), loss="mse")
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.normal(size=(n, sequence_length, num_features)).astype("float32")
        y = rng.normal(size=(n, 1)).astype("float32")
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
