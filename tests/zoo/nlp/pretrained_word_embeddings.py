# keras-io: examples/nlp/pretrained_word_embeddings.py
"""Adapted: a random embedding matrix (rows 0 and 1, padding and OOV, all zeros) in place
of the GloVe vectors, synthetic token ids (0-padded, as TextVectorization gives them) and
20 Newsgroup labels in place of the download; vocabulary 20000 -> 1000, embedding_dim
100 -> 16, Conv1D and Dense widths 128 -> 16 (sequence length 200 kept: the three
Conv1D(5)/MaxPooling1D(5) stages need it)."""

import keras
import numpy as np
from keras import layers
from keras.layers import Embedding

NUM_CLASSES = 20
SEQUENCE_LENGTH = 200
VOCABULARY = 1000  # len(vectorizer.get_vocabulary())


def build_model():
    num_tokens = VOCABULARY + 2
    embedding_dim = 16
    embedding_matrix = np.random.default_rng(1).normal(size=(num_tokens, embedding_dim))
    embedding_matrix[:2] = 0.0

    embedding_layer = Embedding(
        num_tokens,
        embedding_dim,
        trainable=False,
    )
    embedding_layer.build((1,))
    embedding_layer.set_weights([embedding_matrix])

    int_sequences_input = keras.Input(shape=(None,), dtype="int32")
    embedded_sequences = embedding_layer(int_sequences_input)
    x = layers.Conv1D(16, 5, activation="relu")(embedded_sequences)
    x = layers.MaxPooling1D(5)(x)
    x = layers.Conv1D(16, 5, activation="relu")(x)
    x = layers.MaxPooling1D(5)(x)
    x = layers.Conv1D(16, 5, activation="relu")(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dense(16, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    preds = layers.Dense(NUM_CLASSES, activation="softmax")(x)
    model = keras.Model(int_sequences_input, preds)
    model.compile(loss="sparse_categorical_crossentropy", optimizer="rmsprop", metrics=["acc"])
    return model


def _split(rng, n):
    lengths = rng.integers(20, SEQUENCE_LENGTH + 1, size=n)
    tokens = rng.integers(1, VOCABULARY, size=(n, SEQUENCE_LENGTH))
    tokens = tokens * (np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None])
    return tokens.astype("int64"), rng.integers(0, NUM_CLASSES, size=n)


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
