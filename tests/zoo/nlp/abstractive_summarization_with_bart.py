# keras-io: examples/nlp/abstractive_summarization_with_bart.py
"""Adapted: a BartSeq2SeqLM built from a small BartBackbone config (vocabulary 50265 -> 1000,
6 -> 1 layer, 12 -> 2 heads, hidden 768 -> 32, intermediate 3072 -> 64) with no preprocessor,
in place of the "bart_base_en" preset; synthetic token ids laid out as
BartSeq2SeqLMPreprocessor's output (x dict, y = decoder ids shifted left, sample weight =
decoder padding mask as float32, rank 2) in place of the SAMSum strings; encoder/decoder
lengths 512/128 -> 32/16."""

import keras
import keras_hub
import numpy as np

MAX_ENCODER_SEQUENCE_LENGTH = 32
MAX_DECODER_SEQUENCE_LENGTH = 16
VOCABULARY_SIZE = 1000
START, PAD, END = 0, 1, 2  # <s>, <pad>, </s> of the BART tokenizer


def build_model():
    backbone = keras_hub.models.BartBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=64,
    )
    bart_lm = keras_hub.models.BartSeq2SeqLM(backbone=backbone, preprocessor=None)

    optimizer = keras.optimizers.AdamW(
        learning_rate=5e-5,
        weight_decay=0.01,
        epsilon=1e-6,
        global_clipnorm=1.0,  # Gradient clipping.
    )
    # Exclude layernorm and bias terms from weight decay.
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.exclude_from_weight_decay(var_names=["gamma"])
    optimizer.exclude_from_weight_decay(var_names=["beta"])

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    bart_lm.compile(
        optimizer=optimizer,
        loss=loss,
        weighted_metrics=["accuracy"],
    )
    return bart_lm


def _pack(rng, n, length, start):
    """StartEndPacker: start tokens, words, </s>, then <pad>; returns ids and mask."""
    room = length - len(start) - 1
    words = rng.integers(3, room + 1, size=n)
    ids = np.full((n, length), PAD, dtype=np.int32)
    ids[:, : len(start)] = start
    body = rng.integers(3, VOCABULARY_SIZE, size=(n, room)).astype(np.int32)
    for i, w in enumerate(words):
        ids[i, len(start) : len(start) + w] = body[i, :w]
        ids[i, len(start) + w] = END
    return ids, (ids != PAD).astype(np.int32)


def _split(rng, n):
    enc_ids, enc_mask = _pack(rng, n, MAX_ENCODER_SEQUENCE_LENGTH, [START])
    dec_ids, dec_mask = _pack(rng, n, MAX_DECODER_SEQUENCE_LENGTH + 1, [END, START])
    x = {
        "encoder_token_ids": enc_ids,
        "encoder_padding_mask": enc_mask,
        "decoder_token_ids": dec_ids[:, :-1],
        "decoder_padding_mask": dec_mask[:, :-1],
    }
    return x, dec_ids[:, 1:], dec_mask[:, 1:].astype(np.float32)


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
