# keras-io: examples/timeseries/lstm_vs_cnn_timeseries_classification.py
"""LSTM timeseries classifier on FordA (the first of the example's two models, built by
`build_lstm_model`; `build_cnn_model` is kept as written): synthetic z-normalized
univariate series of 16 time steps (cut from 500) with labels 0/1 in place of the UCR TSV
files; LSTM widths cut from 64/32 to 16/8; the EarlyStopping callback is given by
`callbacks()` (ModelCheckpoint, which writes files, is left out).
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

num_classes = 2
series_length = 16


def build_lstm_model(input_shape, num_classes):
    """Build an LSTM-based model for timeseries classification."""
    model = keras.Sequential(
        [
            layers.Input(shape=input_shape),
            layers.LSTM(16, return_sequences=True, dropout=0.3, recurrent_dropout=0.3),
            layers.LSTM(8, dropout=0.3, recurrent_dropout=0.3),
            layers.Dense(16, activation="relu"),
            layers.Dense(num_classes, activation="softmax"),
        ]
    )
    return model


def build_cnn_model(input_shape, num_classes):
    """Build a 1D CNN-based model for timeseries classification."""
    model = keras.Sequential(
        [
            layers.Input(shape=input_shape),
            layers.Conv1D(filters=64, kernel_size=7, padding="same", activation="relu"),
            layers.BatchNormalization(),
            layers.MaxPooling1D(pool_size=2),
            layers.Dropout(0.3),
            layers.Conv1D(filters=128, kernel_size=5, padding="same", activation="relu"),
            layers.BatchNormalization(),
            layers.MaxPooling1D(pool_size=2),
            layers.Dropout(0.3),
            layers.GlobalAveragePooling1D(),
            layers.Dense(16, activation="relu"),
            layers.Dense(num_classes, activation="softmax"),
        ]
    )
    return model


def build_model():
    model = build_lstm_model((series_length, 1), num_classes)
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def callbacks():
    return [
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=20, restore_best_weights=True)
    ]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.normal(size=(n, series_length)).astype(np.float32)
        x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
        x = x.reshape((x.shape[0], x.shape[1], 1))
        y = rng.integers(0, num_classes, size=(n,))
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
