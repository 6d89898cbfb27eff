"""A KerasHub BART sequence-to-sequence model fine-tuned, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/hub_seq2seq_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=16 --epochs=1 --model_dir=/tmp/hub_seq2seq

`BartSeq2SeqLM` over a tiny `BartBackbone` (encoder and decoder) built from its config (no
preset download), trained on what `BartSeq2SeqLMPreprocessor` makes, made here with NumPy:
x = the encoder's and the decoder's token ids and padding masks, y = the decoder's next
tokens, and one sample weight per token, 0 past each target's end. The target is the source
reversed, a toy translation.
"""

import keras
import keras_hub
import numpy as np

VOCABULARY = 200
START, PAD, END = 0, 1, 2  # BART's "<s>", "<pad>" and "</s>"
FIRST_WORD = 4
ENCODER_LENGTH = 12
DECODER_LENGTH = 12
DROPOUT = 0.1  # KerasHub's default, as a user leaves it


def build_model():
    backbone = keras_hub.models.BartBackbone(
        vocabulary_size=VOCABULARY,
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=16,
        dropout=DROPOUT,
    )
    model = keras_hub.models.BartSeq2SeqLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["accuracy"],
    )
    return model


def pack(words, start, length):
    """StartEndPacker's output: start, words, END, then PAD; and the padding mask."""
    token_ids = np.full(length, PAD)
    packed = [*start, *words, END]
    token_ids[: len(packed)] = packed
    return token_ids, np.arange(length) < len(packed)


def pairs(count: int, rng):
    encoder, encoder_mask, decoder, decoder_mask = [], [], [], []
    for length in rng.integers(3, ENCODER_LENGTH - 1, count):
        words = rng.integers(FIRST_WORD, VOCABULARY, length)
        token_ids, mask = pack(words, [START], ENCODER_LENGTH)
        encoder.append(token_ids)
        encoder_mask.append(mask)
        token_ids, mask = pack(words[::-1], [END, START], DECODER_LENGTH + 1)
        decoder.append(token_ids)
        decoder_mask.append(mask)
    decoder, decoder_mask = np.array(decoder, "int32"), np.array(decoder_mask)
    x = {
        "encoder_token_ids": np.array(encoder, "int32"),
        "encoder_padding_mask": np.array(encoder_mask),
        "decoder_token_ids": decoder[:, :-1],
        "decoder_padding_mask": decoder_mask[:, :-1],
    }
    return x, decoder[:, 1:], decoder_mask[:, 1:].astype("float32")


def load_data():
    rng = np.random.default_rng(0)
    return pairs(128, rng), pairs(64, rng)
