# keras-io: examples/timeseries/timeseries_anomaly_detection.py
"""Timeseries anomaly detection with a convolutional autoencoder: synthetic normalized
windows of 32 time steps (TIME_STEPS cut from 288) with one feature in place of the NAB
CSV files; the model is fit on x as both input and target as the example does; the
EarlyStopping callback is given by `callbacks()`.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

TIME_STEPS = 32


def build_model():
    model = keras.Sequential(
        [
            layers.Input(shape=(TIME_STEPS, 1)),
            layers.Conv1D(filters=32, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Dropout(rate=0.2),
            layers.Conv1D(filters=16, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Conv1DTranspose(
                filters=16, kernel_size=7, padding="same", strides=2, activation="relu"
            ),
            layers.Dropout(rate=0.2),
            layers.Conv1DTranspose(
                filters=32, kernel_size=7, padding="same", strides=2, activation="relu"
            ),
            layers.Conv1DTranspose(filters=1, kernel_size=7, padding="same"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mse")
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, mode="min")]


# Generated training sequences for use in the model.
def create_sequences(values, time_steps=TIME_STEPS):
    output = []
    for i in range(len(values) - time_steps + 1):
        output.append(values[i : (i + time_steps)])
    return np.stack(output)


def load_data():
    rng = np.random.default_rng(0)

    def series(n):
        t = np.arange(n + TIME_STEPS - 1)
        values = np.sin(2 * np.pi * t / TIME_STEPS) + 0.1 * rng.normal(size=t.shape)
        values = ((values - values.mean()) / values.std()).astype("float32")
        return create_sequences(values.reshape(-1, 1))

    x_train = series(128)
    x_test = series(64)
    x_val = series(32)
    return (x_train, x_train), (x_val, x_val), (x_test, x_test)
