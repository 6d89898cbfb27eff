"""A KerasHub GPT-2 causal LM fine-tuned with LoRA, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/hub_causal_lm_lora_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=16 --epochs=1 --model_dir=/tmp/hub_lora

`GPT2CausalLM` over a tiny `GPT2Backbone` built from its config (no preset download), with
`backbone.enable_lora(rank=4)`: the backbone is frozen and only the low-rank updates of the
attention's query and value projections train. The data is what KerasHub's own
`GPT2CausalLMPreprocessor` makes of the texts, over a letter-by-letter `GPT2Tokenizer`:
x = {"token_ids", "padding_mask"}, y = the next tokens, and one sample weight per token, False
past each text's end. `fit` runs the preprocessor for you; a task's `load_data` runs it once
(`preprocessor=None` on the model). Each text counts up the alphabet, so the next letter is
learnable.
"""

import string

import keras
import keras_hub
import numpy as np

LETTERS = string.ascii_lowercase
# "<|endoftext|>" starts, ends and pads every text; one token per letter; "Ġ" is a space.
VOCABULARY = {"<|endoftext|>": 0, "Ġ": 1, "Ġa": 2, **{c: 3 + i for i, c in enumerate(LETTERS)}}
MERGES = ["Ġ a"]
SEQUENCE_LENGTH = 16
DROPOUT = 0.1  # KerasHub's default, as a user leaves it


def build_model():
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=SEQUENCE_LENGTH,
        dropout=DROPOUT,
    )
    backbone.enable_lora(rank=4)
    model = keras_hub.models.GPT2CausalLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["accuracy"],
    )
    return model


def texts(count: int, rng) -> list[str]:
    starts, lengths = rng.integers(0, 26, count), rng.integers(3, SEQUENCE_LENGTH - 2, count)
    pairs = zip(starts, lengths, strict=True)
    return ["".join(LETTERS[(s + i) % 26] for i in range(n)) for s, n in pairs]


def load_data():
    tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=VOCABULARY, merges=MERGES)
    preprocessor = keras_hub.models.GPT2CausalLMPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )
    rng = np.random.default_rng(0)

    def split(count: int):
        x, y, sample_weight = preprocessor(texts(count, rng))
        x = {key: value.numpy() for key, value in x.items()}
        return x, y.numpy(), sample_weight.numpy()

    return split(128), split(64)
