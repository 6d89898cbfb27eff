# keras-io: examples/nlp/neural_machine_translation_with_keras_hub.py
"""Adapted: synthetic token ids shaped like the StartEndPacker output (English padded with 0,
Spanish with [START]=2 ... [END]=3 then 0, shifted by one into decoder inputs and targets) in
place of the downloaded spa-eng pairs and the WordPiece tokenizers; MAX_SEQUENCE_LENGTH
40 -> 16, vocabularies 15000 -> 1000, EMBED_DIM 256 -> 32, INTERMEDIATE_DIM 2048 -> 64,
NUM_HEADS 8 -> 4."""

import keras
import keras_hub
import numpy as np

MAX_SEQUENCE_LENGTH = 16
ENG_VOCAB_SIZE = 1000
SPA_VOCAB_SIZE = 1000

EMBED_DIM = 32
INTERMEDIATE_DIM = 64
NUM_HEADS = 4


def build_model():
    # Encoder
    encoder_inputs = keras.Input(shape=(None,), name="encoder_inputs")

    x = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size=ENG_VOCAB_SIZE,
        sequence_length=MAX_SEQUENCE_LENGTH,
        embedding_dim=EMBED_DIM,
    )(encoder_inputs)

    encoder_outputs = keras_hub.layers.TransformerEncoder(
        intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS
    )(inputs=x)
    encoder = keras.Model(encoder_inputs, encoder_outputs)  # noqa: F841 (as in the example)

    # Decoder
    decoder_inputs = keras.Input(shape=(None,), name="decoder_inputs")
    encoded_seq_inputs = keras.Input(shape=(None, EMBED_DIM), name="decoder_state_inputs")

    x = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size=SPA_VOCAB_SIZE,
        sequence_length=MAX_SEQUENCE_LENGTH,
        embedding_dim=EMBED_DIM,
    )(decoder_inputs)

    x = keras_hub.layers.TransformerDecoder(intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS)(
        decoder_sequence=x, encoder_sequence=encoded_seq_inputs
    )
    x = keras.layers.Dropout(0.5)(x)
    decoder_outputs = keras.layers.Dense(SPA_VOCAB_SIZE, activation="softmax")(x)
    decoder = keras.Model(
        [
            decoder_inputs,
            encoded_seq_inputs,
        ],
        decoder_outputs,
    )
    decoder_outputs = decoder([decoder_inputs, encoder_outputs])

    transformer = keras.Model(
        [encoder_inputs, decoder_inputs],
        decoder_outputs,
        name="transformer",
    )
    transformer.compile("rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return transformer


def _split(rng, n):
    positions = np.arange(MAX_SEQUENCE_LENGTH + 1)[None, :]
    eng_lengths = rng.integers(3, MAX_SEQUENCE_LENGTH + 1, size=n)
    eng = rng.integers(4, ENG_VOCAB_SIZE, size=(n, MAX_SEQUENCE_LENGTH))
    eng = eng * (positions[:, :-1] < eng_lengths[:, None])
    spa_lengths = rng.integers(3, MAX_SEQUENCE_LENGTH, size=n)  # [START] + words + [END]
    spa = rng.integers(4, SPA_VOCAB_SIZE, size=(n, MAX_SEQUENCE_LENGTH + 1))
    spa = spa * (positions < spa_lengths[:, None])
    spa[:, 0] = 2
    spa[np.arange(n), spa_lengths - 1] = 3
    x = {"encoder_inputs": eng.astype("int32"), "decoder_inputs": spa[:, :-1].astype("int32")}
    return x, spa[:, 1:].astype("int32")


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
