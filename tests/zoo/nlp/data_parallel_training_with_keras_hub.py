# keras-io: examples/nlp/data_parallel_training_with_keras_hub.py
"""Adapted: a BertMaskedLM built from a small BertBackbone config (as bert_tiny_en_uncased:
2 layers, 2 heads; vocabulary 30522 -> 1000, hidden 128 -> 32, intermediate 512 -> 64) with
no preprocessor, in place of the preset; synthetic inputs laid out as BertMaskedLMPreprocessor's
output (x dict, y = masked token ids, sample weight = mask weights, rank 2) in place of the
wikitext-2 lines; sequence length 512 -> 32, mask_selection_length 96 -> 5. No
MirroredStrategy: scaled_learning_rate is base_learning_rate times one replica. The
TensorBoard and PrintLR callbacks (logging only) are not kept."""

import keras
import keras_hub
import numpy as np

VOCABULARY_SIZE = 1000
SEQUENCE_LENGTH = 32
MASK_SELECTION_LENGTH = 5
PAD, CLS, SEP, MASK = 0, 101, 102, 103  # BERT's special token ids

base_learning_rate = 1e-4
scaled_learning_rate = base_learning_rate * 1  # strategy.num_replicas_in_sync


def build_model():
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=SEQUENCE_LENGTH,
    )
    model_dist = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)

    # This line just sets pooled_dense layer as non-trainiable, we do this to avoid
    # warnings of this layer being unused
    model_dist.get_layer("bert_backbone").get_layer("pooled_dense").trainable = False

    model_dist.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.AdamW(learning_rate=scaled_learning_rate),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=False,
    )
    return model_dist


def _split(rng, n):
    """[CLS] words [SEP] [PAD]..., 15% of the words selected (80% -> [MASK], 10% random)."""
    token_ids = np.full((n, SEQUENCE_LENGTH), PAD, dtype=np.int32)
    mask_positions = np.zeros((n, MASK_SELECTION_LENGTH), dtype=np.int32)
    mask_ids = np.zeros((n, MASK_SELECTION_LENGTH), dtype=np.int32)
    mask_weights = np.zeros((n, MASK_SELECTION_LENGTH), dtype=np.float32)
    for i in range(n):
        words = int(rng.integers(8, SEQUENCE_LENGTH - 1))
        token_ids[i, 0] = CLS
        token_ids[i, 1 : words + 1] = rng.integers(MASK + 1, VOCABULARY_SIZE, size=words)
        token_ids[i, words + 1] = SEP
        k = min(MASK_SELECTION_LENGTH, max(1, round(0.15 * words)))
        positions = np.sort(rng.choice(np.arange(1, words + 1), size=k, replace=False))
        mask_positions[i, :k] = positions
        mask_ids[i, :k] = token_ids[i, positions]
        mask_weights[i, :k] = 1.0
        draw = rng.random(k)
        token_ids[i, positions[draw < 0.8]] = MASK
        random = positions[(draw >= 0.8) & (draw < 0.9)]
        token_ids[i, random] = rng.integers(MASK + 1, VOCABULARY_SIZE, size=len(random))
    x = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": (token_ids != PAD).astype(np.int32),
        "mask_positions": mask_positions,
    }
    return x, mask_ids, mask_weights


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
