# keras-io: examples/nlp/masked_language_modeling.py
"""Adapted: the masked language model pretraining (its own compute_loss/compute_metrics; the
later sentiment classifier fine-tuning is not built); synthetic TextVectorization-style ids
masked by the example's own get_masked_input_and_labels (from np.random.default_rng) in place
of the IMDB reviews; MAX_LEN 256 -> 32, VOCAB_SIZE 30000 -> 1000, EMBED_DIM 128 -> 32, FF_DIM
128 -> 32; MaskedLanguageModel registered so that it reloads."""

from dataclasses import dataclass

import keras
import keras_hub
import numpy as np
from keras import layers


@dataclass
class Config:
    MAX_LEN = 32
    BATCH_SIZE = 32
    LR = 0.001
    VOCAB_SIZE = 1000
    EMBED_DIM = 32
    NUM_HEAD = 8  # used in bert model
    FF_DIM = 32  # used in bert model
    NUM_LAYERS = 1


config = Config()

# The "[mask]" token is the last of the vocabulary set by get_vectorize_layer.
mask_token_id = config.VOCAB_SIZE - 1


def get_masked_input_and_labels(encoded_texts, rng):
    # 15% BERT masking
    inp_mask = rng.random(encoded_texts.shape) < 0.15
    # Do not mask special tokens
    inp_mask[encoded_texts <= 2] = False
    # Set targets to -1 by default, it means ignore
    labels = -1 * np.ones(encoded_texts.shape, dtype=int)
    # Set labels for masked tokens
    labels[inp_mask] = encoded_texts[inp_mask]

    # Prepare input
    encoded_texts_masked = np.copy(encoded_texts)
    # Set input to [MASK] which is the last token for the 90% of tokens
    # This means leaving 10% unchanged
    inp_mask_2mask = inp_mask & (rng.random(encoded_texts.shape) < 0.90)
    encoded_texts_masked[inp_mask_2mask] = mask_token_id  # mask token is the last in the dict

    # Set 10% to a random token
    inp_mask_2random = inp_mask_2mask & (rng.random(encoded_texts.shape) < 1 / 9)
    encoded_texts_masked[inp_mask_2random] = rng.integers(3, mask_token_id, inp_mask_2random.sum())

    # Prepare sample_weights to pass to .fit() method
    sample_weights = np.ones(labels.shape)
    sample_weights[labels == -1] = 0

    # y_labels would be same as encoded_texts i.e input tokens
    y_labels = np.copy(encoded_texts)

    return encoded_texts_masked, y_labels, sample_weights


def bert_module(query, key, value, i):
    # Multi headed self-attention
    attention_output = layers.MultiHeadAttention(
        num_heads=config.NUM_HEAD,
        key_dim=config.EMBED_DIM // config.NUM_HEAD,
        name=f"encoder_{i}_multiheadattention",
    )(query, key, value)
    attention_output = layers.Dropout(0.1, name=f"encoder_{i}_att_dropout")(attention_output)
    attention_output = layers.LayerNormalization(
        epsilon=1e-6, name=f"encoder_{i}_att_layernormalization"
    )(query + attention_output)

    # Feed-forward layer
    ffn = keras.Sequential(
        [
            layers.Dense(config.FF_DIM, activation="relu"),
            layers.Dense(config.EMBED_DIM),
        ],
        name=f"encoder_{i}_ffn",
    )
    ffn_output = ffn(attention_output)
    ffn_output = layers.Dropout(0.1, name=f"encoder_{i}_ffn_dropout")(ffn_output)
    sequence_output = layers.LayerNormalization(
        epsilon=1e-6, name=f"encoder_{i}_ffn_layernormalization"
    )(attention_output + ffn_output)
    return sequence_output


loss_fn = keras.losses.SparseCategoricalCrossentropy(reduction=None)
loss_tracker = keras.metrics.Mean(name="loss")


@keras.saving.register_keras_serializable(package="zoo_masked_language_modeling")
class MaskedLanguageModel(keras.Model):
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        loss = loss_fn(y, y_pred, sample_weight)
        loss_tracker.update_state(loss, sample_weight=sample_weight)
        return keras.ops.sum(loss)

    def compute_metrics(self, x, y, y_pred, sample_weight):
        # Return a dict mapping metric names to current value
        return {"loss": loss_tracker.result()}

    @property
    def metrics(self):
        # We list our `Metric` objects here so that `reset_states()` can be
        # called automatically at the start of each epoch
        # or at the start of `evaluate()`.
        # If you don't implement this property, you have to call
        # `reset_states()` yourself at the time of your choosing.
        return [loss_tracker]


def create_masked_language_bert_model():
    inputs = layers.Input((config.MAX_LEN,), dtype="int64")

    word_embeddings = layers.Embedding(config.VOCAB_SIZE, config.EMBED_DIM, name="word_embedding")(
        inputs
    )
    position_embeddings = keras_hub.layers.PositionEmbedding(sequence_length=config.MAX_LEN)(
        word_embeddings
    )
    embeddings = word_embeddings + position_embeddings

    encoder_output = embeddings
    for i in range(config.NUM_LAYERS):
        encoder_output = bert_module(encoder_output, encoder_output, encoder_output, i)

    mlm_output = layers.Dense(config.VOCAB_SIZE, name="mlm_cls", activation="softmax")(
        encoder_output
    )
    mlm_model = MaskedLanguageModel(inputs, mlm_output, name="masked_bert_model")

    optimizer = keras.optimizers.Adam(learning_rate=config.LR)
    mlm_model.compile(optimizer=optimizer)
    return mlm_model


def build_model():
    return create_masked_language_bert_model()


def _split(rng, n):
    # TextVectorization output: word ids 2 .. VOCAB_SIZE - 2, then 0 padding.
    lengths = rng.integers(8, config.MAX_LEN + 1, size=n)
    encoded = rng.integers(2, mask_token_id, size=(n, config.MAX_LEN)).astype(np.int64)
    encoded[np.arange(config.MAX_LEN)[None, :] >= lengths[:, None]] = 0
    return get_masked_input_and_labels(encoded, rng)


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
