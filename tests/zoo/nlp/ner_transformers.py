# keras-io: examples/nlp/ner_transformers.py
"""Adapted: synthetic CoNLL-shaped token ids and tags (padded with 0) in place of the
downloaded dataset and StringLookup; vocabulary 20000 -> 2000, maxlen 128 -> 32; Keras 3
API (keras.* for tf.keras.*, reduction=None for Reduction.NONE, training=None as the
TransformerBlock.call default, which Keras 3 requires); layers registered with
get_config for saving."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_ner_transformers"
NUM_TAGS = 10  # [PAD], O and B-/I- of PER, ORG, LOC, MISC
VOCAB_SIZE = 2000
MAXLEN = 32


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.rate = rate
        self.att = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential(
            [
                keras.layers.Dense(ff_dim, activation="relu"),
                keras.layers.Dense(embed_dim),
            ]
        )
        self.layernorm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = keras.layers.Dropout(rate)
        self.dropout2 = keras.layers.Dropout(rate)

    def call(self, inputs, training=None):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embed_dim": self.embed_dim,
                "num_heads": self.num_heads,
                "ff_dim": self.ff_dim,
                "rate": self.rate,
            }
        )
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.maxlen = maxlen
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.token_emb = keras.layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = keras.layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = tf.shape(x)[-1]
        positions = tf.range(start=0, limit=maxlen, delta=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

    def get_config(self):
        config = super().get_config()
        config.update(
            {"maxlen": self.maxlen, "vocab_size": self.vocab_size, "embed_dim": self.embed_dim}
        )
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class NERModel(keras.Model):
    def __init__(
        self, num_tags, vocab_size, maxlen=128, embed_dim=32, num_heads=2, ff_dim=32, **kwargs
    ):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.vocab_size = vocab_size
        self.maxlen = maxlen
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
        self.transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
        self.dropout1 = layers.Dropout(0.1)
        self.ff = layers.Dense(ff_dim, activation="relu")
        self.dropout2 = layers.Dropout(0.1)
        self.ff_final = layers.Dense(num_tags, activation="softmax")

    def call(self, inputs, training=False):
        x = self.embedding_layer(inputs)
        x = self.transformer_block(x)
        x = self.dropout1(x, training=training)
        x = self.ff(x)
        x = self.dropout2(x, training=training)
        x = self.ff_final(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_tags": self.num_tags,
                "vocab_size": self.vocab_size,
                "maxlen": self.maxlen,
                "embed_dim": self.embed_dim,
                "num_heads": self.num_heads,
                "ff_dim": self.ff_dim,
            }
        )
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class CustomLoss(keras.losses.Loss):
    def __init__(self, name="custom_ner_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        loss = loss_fn(y_true, y_pred)
        mask = tf.cast((y_true > 0), dtype=tf.float32)
        loss = loss * mask
        return tf.reduce_sum(loss) / tf.reduce_sum(mask)


def build_model():
    ner_model = NERModel(NUM_TAGS, VOCAB_SIZE, maxlen=MAXLEN, embed_dim=32, num_heads=4, ff_dim=64)
    loss = CustomLoss()
    ner_model.compile(optimizer="adam", loss=loss)
    return ner_model


def _split(rng, n):
    lengths = rng.integers(4, MAXLEN + 1, size=n)
    positions = np.arange(MAXLEN)[None, :]
    inside = positions < lengths[:, None]
    tokens = rng.integers(0, VOCAB_SIZE - 1, size=(n, MAXLEN)) * inside
    tags = rng.integers(1, NUM_TAGS, size=(n, MAXLEN)) * inside
    return tokens.astype("int64"), tags.astype("int64")


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
