# keras-io: examples/nlp/Generative_Pretrained_Transformer(GPT).py
"""Adapted: synthetic character ids (vocabulary 65, as Tiny Shakespeare) with targets shifted by
one in place of the downloaded text and its batch generators; n_embd 64 -> 32, n_layer 4 -> 2;
layers and the model registered, given **kwargs and get_config so that they reload."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, models, optimizers

# hyperparameters
batch_size = 16  # how many independent sequences will we process in parallel?
block_size = 32  # what is the maximum context length for predictions?
learning_rate = 1e-3
n_embd = 32
n_head = 4
n_layer = 2
dropout = 0.0
vocab_size = 65
# ------------


# %% Model components
@keras.saving.register_keras_serializable(package="zoo_generative_pretrained_transformer_gpt_")
class FeedForward(layers.Layer):
    """A simple linear layer followed by a non-linearity"""

    def __init__(self, n_embd, **kwargs):
        super().__init__(**kwargs)
        self.n_embd = n_embd
        self.net = models.Sequential(
            [
                layers.Dense(4 * n_embd, activation="relu"),
                layers.Dense(n_embd),
                layers.Dropout(dropout),
            ]
        )

    def call(self, x):
        return self.net(x)

    def get_config(self):
        return {**super().get_config(), "n_embd": self.n_embd}


@keras.saving.register_keras_serializable(package="zoo_generative_pretrained_transformer_gpt_")
class Block(layers.Layer):
    """Transformer block: communication followed by computation"""

    def __init__(self, n_embd, n_head, **kwargs):
        super().__init__(**kwargs)
        self.n_embd = n_embd
        self.n_head = n_head
        # n_embd: embedding dimension, n_head: the number of heads we'd like
        self.sa = layers.MultiHeadAttention(
            num_heads=n_head, key_dim=n_embd // n_head, dropout=dropout
        )
        self.ffwd = FeedForward(n_embd)
        self.ln1 = layers.LayerNormalization()
        self.ln2 = layers.LayerNormalization()

    def call(self, x):
        attn_output = self.sa(
            self.ln1(x), self.ln1(x), use_causal_mask=True
        )  # use causal mask to ensure each token can only see previous tokens
        x = x + attn_output
        x = x + self.ffwd(self.ln2(x))
        return x

    def get_config(self):
        return {**super().get_config(), "n_embd": self.n_embd, "n_head": self.n_head}


# Bigram Language Model
@keras.saving.register_keras_serializable(package="zoo_generative_pretrained_transformer_gpt_")
class BigramLanguageModel(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # each token directly reads off the logits for the next token from a lookup table
        self.token_embedding_table = layers.Embedding(vocab_size, n_embd)
        self.position_embedding_table = layers.Embedding(block_size, n_embd)
        self.blocks = [Block(n_embd, n_head) for _ in range(n_layer)]
        self.ln_f = layers.LayerNormalization()
        self.lm_head = layers.Dense(vocab_size)

    def call(self, idx, targets=None):
        B, T = idx.shape  # noqa: N806, RUF059 (as in the example)
        # idx and targets are both (B,T) tensor of integers
        tok_emb = self.token_embedding_table(idx)  # (B,T,C)
        pos_emb = self.position_embedding_table(
            tf.range(T)[tf.newaxis, :]
        )  # initially (T,C) adding new axis and get # (1,T,C)
        x = tok_emb + pos_emb  # (B,T,C)
        for block in self.blocks:  # (B,T,C)
            x = block(x)
        x = self.ln_f(x)  # (B,T,C)
        logits = self.lm_head(x)  # (B,T,vocab_size)

        if targets is None:
            return logits, None

        logits_flat = tf.reshape(logits, [-1, logits.shape[-1]])
        targets_flat = tf.reshape(targets, [-1])
        loss = keras.losses.sparse_categorical_crossentropy(
            targets_flat, logits_flat, from_logits=True
        )
        return logits, tf.reduce_mean(loss)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits, loss = self(x, y)  # noqa: RUF059 (as in the example)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))  # noqa: B905
        return {"loss": loss}

    def test_step(self, data):
        x, y = data
        logits, loss = self(x, y)  # noqa: RUF059 (as in the example)
        return {"loss": loss}


def build_model():
    model = BigramLanguageModel()
    model.build((batch_size, block_size))
    model.compile(optimizer=optimizers.Adam(learning_rate))
    return model


def _split(rng, n):
    data = rng.integers(0, vocab_size, size=(n, block_size + 1)).astype(np.int64)
    return data[:, :block_size], data[:, 1:]


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
