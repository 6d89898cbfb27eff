# keras-io: examples/generative/lstm_character_level_text_generation.py
"""Adapted: synthetic one-hot character windows over a 57-character alphabet replace the
Nietzsche text; maxlen 40 -> 20 and LSTM 128 -> 32; the text sampling after each epoch is
dropped."""

import keras
import numpy as np
from keras import layers

maxlen = 20
num_chars = 57


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(maxlen, num_chars)),
            layers.LSTM(32),
            layers.Dense(num_chars, activation="softmax"),
        ]
    )
    optimizer = keras.optimizers.RMSprop(learning_rate=0.01)
    model.compile(loss="categorical_crossentropy", optimizer=optimizer)
    return model


def _split(rng, n):
    chars = rng.integers(0, num_chars, size=(n, maxlen + 1))
    x = np.zeros((n, maxlen, num_chars), dtype=np.bool_)
    y = np.zeros((n, num_chars), dtype=np.bool_)
    for i in range(n):
        x[i, np.arange(maxlen), chars[i, :maxlen]] = 1
        y[i, chars[i, maxlen]] = 1
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
