# keras-io: examples/nlp/character_and_byte_level_text_generation.py
"""Adapted: the character-level (UnicodeCharacterTokenizer, vocabulary 591) model of the two,
the byte-level one differing only in its vocabulary (256); synthetic character ids and
next-character targets in place of Don Quijote and the keras_nlp tokenizers; seq_length
100 -> 32."""

import keras
import numpy as np

unicode_vocab_size = 591
seq_length = 32


def build_model():
    unicode_input = keras.Input(shape=(None,))
    unicode_output = keras.layers.Embedding(input_dim=591, output_dim=128)(unicode_input)
    unicode_output = keras.layers.LSTM(128)(unicode_output)
    unicode_output = keras.layers.Dense(unicode_vocab_size, activation="softmax")(unicode_output)
    unicode_model = keras.Model(unicode_input, unicode_output)

    optimizer = keras.optimizers.RMSprop(learning_rate=0.01)
    unicode_model.compile(loss="sparse_categorical_crossentropy", optimizer=optimizer)
    return unicode_model


def _split(rng, n):
    sequence = rng.integers(0, unicode_vocab_size, size=(n, seq_length + 1)).astype(np.int32)
    return sequence[:, :-1], sequence[:, -1]


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
