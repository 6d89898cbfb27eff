"""A sequence tagger as keras.io writes its token models: `Embedding(mask_zero=True)` over
sequences of different lengths padded with 0, one label per token, Keras's default loss,
which leaves the padding out and averages over the batch's real tokens."""

import keras
import numpy as np
from keras import layers

VOCABULARY, LENGTH, TAGS = 50, 10, 4


def build_model():
    tokens = keras.Input((LENGTH,), dtype="int32")
    x = layers.Embedding(VOCABULARY, 8, mask_zero=True)(tokens)
    x = layers.Dense(8, activation="tanh")(x)
    outputs = layers.Dense(TAGS, activation="softmax")(x)
    model = keras.Model(tokens, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    # From 1 real token to all LENGTH: shares of a batch hold different numbers of tokens.
    lengths = rng.integers(1, LENGTH + 1, size=200)
    x = rng.integers(1, VOCABULARY, size=(200, LENGTH)).astype("int32")
    x[np.arange(LENGTH) >= lengths[:, None]] = 0
    y = rng.integers(0, TAGS, size=(200, LENGTH))
    # 72 test examples: the last global batch of 32 is padded, one replica's share empty.
    return (x[:128], y[:128]), (x[128:], y[128:])
