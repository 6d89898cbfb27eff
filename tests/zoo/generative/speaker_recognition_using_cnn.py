# keras-io: examples/generative/speaker_recognition_using_cnn.py
"""Adapted: synthetic FFT magnitudes of 5 speakers replace the Kaggle audio (noise mixing
and FFT are data preparation, done before the model); the sampling rate 16000 -> 256, so
the input is (128, 1) instead of (8000, 1); the example's `build_model(input_shape,
num_classes)` is renamed `build_cnn`; the ModelCheckpoint callback, which only writes
files, is dropped. A validation split of 32 examples, as
the example's fit takes validation data."""

import keras
import numpy as np

SAMPLING_RATE = 256
NUM_SPEAKERS = 5


def residual_block(x, filters, conv_num=3, activation="relu"):
    # Shortcut
    s = keras.layers.Conv1D(filters, 1, padding="same")(x)
    for i in range(conv_num - 1):  # noqa: B007 (as in the example)
        x = keras.layers.Conv1D(filters, 3, padding="same")(x)
        x = keras.layers.Activation(activation)(x)
    x = keras.layers.Conv1D(filters, 3, padding="same")(x)
    x = keras.layers.Add()([x, s])
    x = keras.layers.Activation(activation)(x)
    return keras.layers.MaxPool1D(pool_size=2, strides=2)(x)


def build_cnn(input_shape, num_classes):
    inputs = keras.layers.Input(shape=input_shape, name="input")

    x = residual_block(inputs, 16, 2)
    x = residual_block(x, 32, 2)
    x = residual_block(x, 64, 3)
    x = residual_block(x, 128, 3)
    x = residual_block(x, 128, 3)

    x = keras.layers.AveragePooling1D(pool_size=3, strides=3)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(128, activation="relu")(x)

    outputs = keras.layers.Dense(num_classes, activation="softmax", name="output")(x)

    return keras.models.Model(inputs=inputs, outputs=outputs)


def build_model():
    model = build_cnn((SAMPLING_RATE // 2, 1), NUM_SPEAKERS)
    # Compile the model using Adam's default learning rate
    model.compile(optimizer="Adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)]


def _split(rng, n):
    x = np.abs(rng.normal(size=(n, SAMPLING_RATE // 2, 1))).astype("float32")
    y = rng.integers(0, NUM_SPEAKERS, size=(n,)).astype("int32")
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 32), _split(rng, 64)
