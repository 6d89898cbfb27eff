# keras-io: examples/nlp/bidirectional_lstm_imdb.py
"""Adapted: synthetic padded word ids (num_words 20000) and 0/1 labels in place of the IMDB
download; maxlen 200 -> 32."""

import keras
import numpy as np
from keras import layers

max_features = 20000  # Only consider the top 20k words
maxlen = 32  # Only consider the first 32 words of each movie review


def build_model():
    # Input for variable-length sequences of integers
    inputs = keras.Input(shape=(None,), dtype="int32")
    # Embed each integer in a 128-dimensional vector
    x = layers.Embedding(max_features, 128)(inputs)
    # Add 2 bidirectional LSTMs
    x = layers.Bidirectional(layers.LSTM(64, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(64))(x)
    # Add a classifier
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def _split(rng, n):
    # pad_sequences pads and truncates at the front with 0.
    lengths = rng.integers(5, maxlen + 1, size=n)
    x = rng.integers(1, max_features, size=(n, maxlen)).astype(np.int32)
    x[np.arange(maxlen)[None, :] < (maxlen - lengths)[:, None]] = 0
    y = rng.integers(0, 2, size=(n,)).astype(np.int64)
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
