# keras-io: examples/nlp/imdb_lstm_sentiment.py
"""Adapted: synthetic padded word ids (Tokenizer num_words 5000) and 0/1 labels in place of the
Kaggle IMDB csv; maxlen 200 -> 32. The example's missing imports (Embedding, LSTM, Dense)
are written out as keras.layers."""

import numpy as np
from keras.layers import LSTM, Dense, Embedding
from keras.models import Sequential

MAXLEN = 32


def build_model():
    model = Sequential()  # sequential model
    # add layers
    model.add(Embedding(input_dim=5000, output_dim=128, input_shape=(MAXLEN,)))
    model.add(LSTM(128, dropout=0.2))
    model.add(Dense(1, activation="sigmoid"))

    # compile the model
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def _split(rng, n):
    # pad_sequences pads and truncates at the front with 0.
    lengths = rng.integers(5, MAXLEN + 1, size=n)
    x = rng.integers(1, 5000, size=(n, MAXLEN)).astype(np.int32)
    x[np.arange(MAXLEN)[None, :] < (MAXLEN - lengths)[:, None]] = 0
    y = rng.integers(0, 2, size=(n,)).astype(np.int64)
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
