# keras-io: examples/generative/text_generation_gpt.py
"""Adapted: KerasHub (`keras_hub`, the renamed KerasNLP) and Keras 3 stand in for
`keras_nlp` and `keras_core`; synthetic token ids (vocabulary 5000, [PAD]=0, [BOS]=2) stand
in for the SimpleBooks lines that the WordPiece tokenizer and StartEndPacker turn into
(features, labels); SEQ_LEN 128 -> 32, EMBED_DIM and FEED_FORWARD_DIM 256 -> 32; the
sampling that follows training is dropped."""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

# Data
SEQ_LEN = 32

# Model
EMBED_DIM = 32
FEED_FORWARD_DIM = 32
NUM_HEADS = 3
NUM_LAYERS = 2
VOCAB_SIZE = 5000  # Limits parameters in model.

BOS_ID = 2


def build_model():
    inputs = keras.layers.Input(shape=(None,), dtype=tf.int32)
    # Embedding.
    embedding_layer = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size=VOCAB_SIZE,
        sequence_length=SEQ_LEN,
        embedding_dim=EMBED_DIM,
        mask_zero=True,
    )
    x = embedding_layer(inputs)
    # Transformer decoders.
    for _ in range(NUM_LAYERS):
        decoder_layer = keras_hub.layers.TransformerDecoder(
            num_heads=NUM_HEADS,
            intermediate_dim=FEED_FORWARD_DIM,
        )
        x = decoder_layer(x)  # Giving one argument only skips cross-attention.
    # Output.
    outputs = keras.layers.Dense(VOCAB_SIZE)(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    perplexity = keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0)
    model.compile(optimizer="adam", loss=loss_fn, metrics=[perplexity])
    return model


def _split(rng, n):
    # labels: the tokenized line (ids 3.. of the vocabulary, padded with 0 at the end);
    # features: the same line after the [BOS] start token, cut to SEQ_LEN.
    lengths = rng.integers(SEQ_LEN // 2, SEQ_LEN + 1, size=n)
    labels = np.zeros((n, SEQ_LEN), dtype="int32")
    for i, length in enumerate(lengths):
        labels[i, :length] = rng.integers(3, VOCAB_SIZE, size=length)
    features = np.concatenate([np.full((n, 1), BOS_ID, dtype="int32"), labels[:, :-1]], axis=1)
    return features, labels


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
