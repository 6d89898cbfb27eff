# keras-io: examples/timeseries/timeseries_classification_from_scratch.py
"""Fully convolutional timeseries classifier on FordA: synthetic z-normalized univariate
series of 32 time steps (cut from 500) with labels 0/1 in place of the UCR TSV files; the
ReduceLROnPlateau and EarlyStopping callbacks are given by `callbacks()` (ModelCheckpoint,
which writes files, is left out).
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np

num_classes = 2
series_length = 32


def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)

    conv1 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)

    conv2 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)

    conv3 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv2)
    conv3 = keras.layers.BatchNormalization()(conv3)
    conv3 = keras.layers.ReLU()(conv3)

    gap = keras.layers.GlobalAveragePooling1D()(conv3)

    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)

    return keras.models.Model(inputs=input_layer, outputs=output_layer)


def build_model():
    model = make_model(input_shape=(series_length, 1))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def callbacks():
    return [
        keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", factor=0.5, patience=20, min_lr=0.0001
        ),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=50, verbose=1),
    ]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.normal(size=(n, series_length))
        x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
        x = x.reshape((x.shape[0], x.shape[1], 1))
        y = rng.integers(0, num_classes, size=(n,))
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
