# keras-io: examples/nlp/fnet_classification_with_keras_hub.py
"""Adapted: the FNet classifier (the example's first model; its Transformer comparison model is
not built); synthetic WordPiece ids (vocabulary 15000, [PAD] = 0 after the words) and 0/1
labels in place of the IMDb reviews and the trained tokenizer; MAX_SEQUENCE_LENGTH
512 -> 32, EMBED_DIM 128 -> 32, INTERMEDIATE_DIM 512 -> 64."""

import keras
import keras_hub
import numpy as np

MAX_SEQUENCE_LENGTH = 32
VOCAB_SIZE = 15000

EMBED_DIM = 32
INTERMEDIATE_DIM = 64


def build_model():
    input_ids = keras.Input(shape=(None,), dtype="int64", name="input_ids")

    x = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size=VOCAB_SIZE,
        sequence_length=MAX_SEQUENCE_LENGTH,
        embedding_dim=EMBED_DIM,
        mask_zero=True,
    )(input_ids)

    x = keras_hub.layers.FNetEncoder(intermediate_dim=INTERMEDIATE_DIM)(inputs=x)
    x = keras_hub.layers.FNetEncoder(intermediate_dim=INTERMEDIATE_DIM)(inputs=x)
    x = keras_hub.layers.FNetEncoder(intermediate_dim=INTERMEDIATE_DIM)(inputs=x)

    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(0.1)(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)

    fnet_classifier = keras.Model(input_ids, outputs, name="fnet_classifier")
    fnet_classifier.compile(
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    return fnet_classifier


def _split(rng, n):
    lengths = rng.integers(5, MAX_SEQUENCE_LENGTH + 1, size=n)
    ids = rng.integers(2, VOCAB_SIZE, size=(n, MAX_SEQUENCE_LENGTH)).astype(np.int64)
    ids[np.arange(MAX_SEQUENCE_LENGTH)[None, :] >= lengths[:, None]] = 0
    y = rng.integers(0, 2, size=(n,)).astype(np.int32)
    return {"input_ids": ids}, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
