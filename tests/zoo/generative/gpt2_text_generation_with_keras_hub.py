# keras-io: examples/generative/gpt2_text_generation_with_keras_hub.py
"""Adapted: the TensorFlow backend in place of JAX; a GPT2CausalLM built from a small
config (GPT2Backbone of 2 layers, 2 heads, hidden 32; a byte-level BPE tokenizer over a
30-entry vocabulary written here, sequence_length 128 -> 32) in place of the
"gpt2_base_en" preset; synthetic lowercase sentences (an unbatched tf.data.Dataset of
strings, as the reddit documents are) replace reddit_tifu, so the decay steps are the
4 batches of one epoch; the mixed_float16 policy the example sets on import is set in
build_model(); generation and the Chinese-poem fine-tuning are dropped."""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

# Byte-level BPE: "Ġ" is the space byte; a few merges so that the tokenizer merges.
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
VOCABULARY = {"<|endoftext|>": 0, "Ġ": 1}
for letter in LETTERS:
    VOCABULARY[letter] = len(VOCABULARY)
MERGES = ["Ġ t", "h e"]
for merge in MERGES:
    VOCABULARY["".join(merge.split())] = len(VOCABULARY)

num_epochs = 1
STEPS_PER_EPOCH = 4  # 128 documents at batch 32


def build_model():
    keras.mixed_precision.set_global_policy("mixed_float16")

    tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=VOCABULARY, merges=MERGES)
    # To speed up training and generation, we use preprocessor of length 128
    # instead of full length 1024.
    preprocessor = keras_hub.models.GPT2CausalLMPreprocessor(
        tokenizer,
        sequence_length=32,
    )
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=32,
    )
    gpt2_lm = keras_hub.models.GPT2CausalLM(backbone, preprocessor=preprocessor)

    # Linearly decaying learning rate.
    learning_rate = keras.optimizers.schedules.PolynomialDecay(
        5e-5,
        decay_steps=STEPS_PER_EPOCH * num_epochs,
        end_learning_rate=0.0,
    )
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    gpt2_lm.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=loss,
        weighted_metrics=["accuracy"],
    )
    return gpt2_lm


def _documents(rng, n):
    docs = []
    for _ in range(n):
        words = [
            "".join(rng.choice(LETTERS, size=rng.integers(1, 6)))
            for _ in range(rng.integers(3, 10))
        ]
        docs.append(" ".join(words))
    return tf.data.Dataset.from_tensor_slices(np.array(docs))


def load_data():
    rng = np.random.default_rng(0)
    return _documents(rng, 128), _documents(rng, 64)
