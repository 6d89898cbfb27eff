# keras-io: examples/generative/text_generation_fnet.py
"""Adapted: synthetic token ids (vocabulary 8192, 0 = padding, 2/3 = [start]/[end]) stand
in for the Cornell dialogs that TextVectorization turns into the example's dict of inputs
and targets, the targets as a plain array (Keras 3 does not match the example's
`{"outputs": ...}` to the single output when the loss is one string); MAX_LENGTH 40 -> 20,
EMBED_DIM 256 -> 32, LATENT_DIM 512 -> 64, NUM_HEADS 8 -> 2. Keras 3 port of the padding
mask: PositionalEmbedding's `compute_mask` uses `keras.ops.not_equal` (Keras 3 calls it on
symbolic inputs, where `tf.math.not_equal` fails) and the layer sets
`supports_masking = True` (Keras 3 computes no mask otherwise); FNetDecoder.call takes the
mask as `inputs_mask` (Keras 3 fills `mask` only for a layer called with one tensor, so
the example's `padding_mask` would be unset). The layers get get_config() and a
registration so that the model reloads; the decoding after training is dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

VOCAB_SIZE = 8192
MAX_LENGTH = 20
EMBED_DIM = 32
LATENT_DIM = 64
NUM_HEADS = 2


@keras.saving.register_keras_serializable(package="zoo_text_generation_fnet")
class FNetEncoder(layers.Layer):
    def __init__(self, embed_dim, dense_dim, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.dense_proj = keras.Sequential(
            [
                layers.Dense(dense_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()

    def call(self, inputs):
        # Casting the inputs to complex64
        inp_complex = tf.cast(inputs, tf.complex64)
        # Projecting the inputs to the frequency domain using FFT2D and
        # extracting the real part of the output
        fft = tf.math.real(tf.signal.fft2d(inp_complex))
        proj_input = self.layernorm_1(inputs + fft)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)

    def get_config(self):
        config = super().get_config()
        config.update({"embed_dim": self.embed_dim, "dense_dim": self.dense_dim})
        return config


@keras.saving.register_keras_serializable(package="zoo_text_generation_fnet")
class PositionalEmbedding(layers.Layer):
    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)
        self.sequence_length = sequence_length
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.supports_masking = True

    def call(self, inputs):
        length = tf.shape(inputs)[-1]
        positions = tf.range(start=0, limit=length, delta=1)
        embedded_tokens = self.token_embeddings(inputs)
        embedded_positions = self.position_embeddings(positions)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return keras.ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "vocab_size": self.vocab_size,
                "embed_dim": self.embed_dim,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="zoo_text_generation_fnet")
class FNetDecoder(layers.Layer):
    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.latent_dim = latent_dim
        self.num_heads = num_heads
        self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential(
            [
                layers.Dense(latent_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, encoder_outputs, inputs_mask=None):
        mask = inputs_mask
        causal_mask = self.get_causal_attention_mask(inputs)
        if mask is not None:
            padding_mask = tf.cast(mask[:, tf.newaxis, :], dtype="int32")
            padding_mask = tf.minimum(padding_mask, causal_mask)

        attention_output_1 = self.attention_1(
            query=inputs, value=inputs, key=inputs, attention_mask=causal_mask
        )
        out_1 = self.layernorm_1(inputs + attention_output_1)

        attention_output_2 = self.attention_2(
            query=out_1,
            value=encoder_outputs,
            key=encoder_outputs,
            attention_mask=padding_mask,
        )
        out_2 = self.layernorm_2(out_1 + attention_output_2)

        proj_output = self.dense_proj(out_2)
        return self.layernorm_3(out_2 + proj_output)

    def get_causal_attention_mask(self, inputs):
        input_shape = tf.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = tf.range(sequence_length)[:, tf.newaxis]
        j = tf.range(sequence_length)
        mask = tf.cast(i >= j, dtype="int32")
        mask = tf.reshape(mask, (1, input_shape[1], input_shape[1]))
        mult = tf.concat(
            [tf.expand_dims(batch_size, -1), tf.constant([1, 1], dtype=tf.int32)],
            axis=0,
        )
        return tf.tile(mask, mult)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embed_dim": self.embed_dim,
                "latent_dim": self.latent_dim,
                "num_heads": self.num_heads,
            }
        )
        return config


def create_model():
    encoder_inputs = keras.Input(shape=(None,), dtype="int32", name="encoder_inputs")
    x = PositionalEmbedding(MAX_LENGTH, VOCAB_SIZE, EMBED_DIM)(encoder_inputs)
    encoder_outputs = FNetEncoder(EMBED_DIM, LATENT_DIM)(x)
    encoder = keras.Model(encoder_inputs, encoder_outputs)  # noqa: F841 (as the example)
    decoder_inputs = keras.Input(shape=(None,), dtype="int32", name="decoder_inputs")
    encoded_seq_inputs = keras.Input(shape=(None, EMBED_DIM), name="decoder_state_inputs")
    x = PositionalEmbedding(MAX_LENGTH, VOCAB_SIZE, EMBED_DIM)(decoder_inputs)
    x = FNetDecoder(EMBED_DIM, LATENT_DIM, NUM_HEADS)(x, encoded_seq_inputs)
    x = layers.Dropout(0.5)(x)
    decoder_outputs = layers.Dense(VOCAB_SIZE, activation="softmax")(x)
    decoder = keras.Model([decoder_inputs, encoded_seq_inputs], decoder_outputs, name="outputs")
    decoder_outputs = decoder([decoder_inputs, encoder_outputs])
    fnet = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs, name="fnet")
    return fnet


def build_model():
    fnet = create_model()
    fnet.compile("adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return fnet


def _sentences(rng, n):
    # "[start] words [end]" padded with 0 to MAX_LENGTH, as the vectorizer outputs.
    out = np.zeros((n, MAX_LENGTH), dtype="int64")
    lengths = rng.integers(1, MAX_LENGTH - 1, size=n)
    for i, length in enumerate(lengths):
        out[i, 0] = 2
        out[i, 1 : 1 + length] = rng.integers(4, VOCAB_SIZE, size=length)
        out[i, 1 + length] = 3
    return out


def _split(rng, n):
    inputs = _sentences(rng, n)
    outputs = np.pad(_sentences(rng, n), [[0, 0], [0, 1]])
    return (
        {"encoder_inputs": inputs, "decoder_inputs": outputs[:, :-1]},
        outputs[:, 1:],
    )


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
