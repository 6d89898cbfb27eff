# keras-io: examples/nlp/multi_label_classification.py
"""Adapted: synthetic TF-IDF vectors (as the bigram TextVectorization, whose vocabulary is cut
to 1000 tokens) and multi-hot float labels over a stand-in label vocabulary of 154 terms
([UNK] first, never set) in place of the arXiv abstracts."""

import keras
import numpy as np
from keras import layers

NUM_TOKENS = 1000  # text_vectorizer's max_tokens (the abstracts' vocabulary size)
NUM_TERMS = 154  # lookup.vocabulary_size()


def make_model():
    shallow_mlp_model = keras.Sequential(
        [
            layers.Dense(512, activation="relu"),
            layers.Dense(256, activation="relu"),
            layers.Dense(NUM_TERMS, activation="sigmoid"),
        ]  # More on why "sigmoid" has been used here in a moment.
    )
    return shallow_mlp_model


def build_model():
    shallow_mlp_model = make_model()
    shallow_mlp_model.compile(
        loss="binary_crossentropy", optimizer="adam", metrics=["binary_accuracy"]
    )
    return shallow_mlp_model


def _split(rng, n):
    idf = np.log(1.0 + 1.0 / rng.uniform(0.001, 1.0, size=NUM_TOKENS))
    counts = rng.poisson(0.1, size=(n, NUM_TOKENS))
    x = (counts * idf).astype(np.float32)
    y = np.zeros((n, NUM_TERMS), dtype=np.float32)
    for i in range(n):
        y[i, rng.choice(np.arange(1, NUM_TERMS), size=rng.integers(1, 4), replace=False)] = 1.0
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
