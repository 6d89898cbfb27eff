"""A KerasHub BERT text classifier fine-tuned on token ids, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/hub_text_classifier_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=16 --epochs=1 --model_dir=/tmp/hub_text

`BertTextClassifier` over a tiny `BertBackbone` built from its config (no preset download),
with `preprocessor=None`: x is the dict the backbone takes ("token_ids", "segment_ids",
"padding_mask"). The sentences are random token ids; a label-1 sentence holds token 7.
"""

import keras
import keras_hub
import numpy as np

VOCABULARY = 200
SEQUENCE_LENGTH = 16
MARKER = 7
DROPOUT = 0.1  # KerasHub's default, as a user leaves it


def build_model():
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCABULARY,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=SEQUENCE_LENGTH,
        dropout=DROPOUT,
    )
    model = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=None, dropout=DROPOUT
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def sentences(count: int, rng):
    labels = rng.integers(0, 2, count)
    lengths = rng.integers(6, SEQUENCE_LENGTH + 1, count)
    token_ids = rng.integers(10, VOCABULARY, (count, SEQUENCE_LENGTH))
    positions = np.arange(SEQUENCE_LENGTH)
    padding_mask = positions < lengths[:, None]
    token_ids[:, 0] = 2  # [CLS]
    where = rng.integers(1, lengths - 1)
    token_ids[labels == 1, where[labels == 1]] = MARKER
    token_ids[positions == (lengths - 1)[:, None]] = 3  # [SEP]
    token_ids[~padding_mask] = 0
    x = {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": np.zeros_like(token_ids, dtype="int32"),
        "padding_mask": padding_mask,
    }
    return x, labels.astype("int32")


def load_data():
    rng = np.random.default_rng(0)
    return sentences(128, rng), sentences(64, rng)
