# keras-io: examples/nlp/active_learning_review_classification.py
"""Adapted: synthetic token ids (vocabulary 3000, as the adapted TextVectorization gives them)
and 0/1 labels in place of the IMDB reviews; output_sequence_length 150 -> 32. The model and
compile are those of both training runs (full data and active learning); the EarlyStopping
callback is kept, the ModelCheckpoint (a file write) is not. A validation split of 32 examples,
as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

SEQUENCE_LENGTH = 32


def create_model():
    model = keras.models.Sequential(
        [
            layers.Input(shape=(SEQUENCE_LENGTH,)),
            layers.Embedding(input_dim=3000, output_dim=128),
            layers.Bidirectional(layers.LSTM(32, return_sequences=True)),
            layers.GlobalMaxPool1D(),
            layers.Dense(20, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    return model


def build_model():
    model = create_model()
    model.compile(
        loss="binary_crossentropy",
        optimizer="rmsprop",
        metrics=[
            keras.metrics.BinaryAccuracy(),
            keras.metrics.FalseNegatives(),
            keras.metrics.FalsePositives(),
        ],
    )
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(patience=4, verbose=1)]


def _split(rng, n):
    x = rng.integers(0, 3000, size=(n, SEQUENCE_LENGTH)).astype(np.int64)
    y = rng.integers(0, 2, size=(n,)).astype(np.int64)
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 32), _split(rng, 64)
