"""A text classifier as keras.io writes its transformers: a token embedding plus a position
embedding looked up with `ops.arange(length)` (the same rows for every example), trained
with Adam."""

import keras
import numpy as np
from keras import layers, ops

VOCABULARY, LENGTH = 200, 12


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, length, vocabulary, width, **kwargs):
        super().__init__(**kwargs)
        self.length, self.vocabulary, self.width = length, vocabulary, width
        self.tokens = layers.Embedding(vocabulary, width)
        self.positions = layers.Embedding(length, width)

    def call(self, x):
        return self.tokens(x) + self.positions(ops.arange(0, ops.shape(x)[-1]))

    def get_config(self):
        return {
            **super().get_config(),
            "length": self.length,
            "vocabulary": self.vocabulary,
            "width": self.width,
        }


def build_model():
    tokens = keras.Input((LENGTH,), dtype="int32")
    x = TokenAndPositionEmbedding(LENGTH, VOCABULARY, 8)(tokens)
    x = layers.Dense(8, activation="relu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = keras.Model(tokens, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.integers(1, VOCABULARY, size=(192, LENGTH)).astype("int32")
    y = rng.integers(0, 2, size=192)
    return (x[:128], y[:128]), (x[128:], y[128:])
