# keras-io: examples/nlp/text_classification_from_scratch.py
"""Adapted: synthetic token ids (0-padded, as the TextVectorization map gives them) and 0/1
labels in place of the IMDB text files; max_features 20000 -> 2000, sequence_length
500 -> 32, embedding_dim, Conv1D and Dense widths 128 -> 16."""

import keras
import numpy as np
from keras import layers

max_features = 2000
embedding_dim = 16
sequence_length = 32


def build_model():
    # A integer input for vocab indices.
    inputs = keras.Input(shape=(None,), dtype="int64")

    # Next, we add a layer to map those vocab indices into a space of dimensionality
    # 'embedding_dim'.
    x = layers.Embedding(max_features, embedding_dim)(inputs)
    x = layers.Dropout(0.5)(x)

    # Conv1D + global max pooling
    x = layers.Conv1D(16, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.Conv1D(16, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.GlobalMaxPooling1D()(x)

    # We add a vanilla hidden layer:
    x = layers.Dense(16, activation="relu")(x)
    x = layers.Dropout(0.5)(x)

    # We project onto a single unit output layer, and squash it with a sigmoid:
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

    model = keras.Model(inputs, predictions)

    # Compile the model with binary crossentropy loss and an adam optimizer.
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def _split(rng, n):
    lengths = rng.integers(8, sequence_length + 1, size=n)
    tokens = rng.integers(1, max_features, size=(n, sequence_length))
    tokens = tokens * (np.arange(sequence_length)[None, :] < lengths[:, None])
    return tokens.astype("int64"), rng.integers(0, 2, size=n).astype("int32")


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
