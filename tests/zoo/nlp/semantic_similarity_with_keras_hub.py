# keras-io: examples/nlp/semantic_similarity_with_keras_hub.py
"""Adapted: the example's last BERT run (AdamW with its TriangularSchedule, the model it
saves and reloads); a BertClassifier built from a small BertBackbone config (1 layer,
2 heads, hidden 32, intermediate 64) and a BertTextClassifierPreprocessor over a made-up
WordPiece vocabulary (sequence_length 32) in place of the bert_tiny_en_uncased preset;
synthetic (hypothesis, premise) string pairs with labels 0-2 in place of SNLI, as
unbatched tf.data elements; warmup/total steps counted for 128 examples at the example's
batch of 16; TriangularSchedule registered for saving."""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

WORDS = [f"word{i}" for i in range(200)]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


@keras.saving.register_keras_serializable(package="zoo_semantic_similarity_with_keras_hub")
class TriangularSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear ramp up for `warmup` steps, then linear decay to zero at `total` steps."""

    def __init__(self, rate, warmup, total):
        self.rate = rate
        self.warmup = warmup
        self.total = total

    def get_config(self):
        config = {"rate": self.rate, "warmup": self.warmup, "total": self.total}
        return config

    def __call__(self, step):
        step = keras.ops.cast(step, dtype="float32")
        rate = keras.ops.cast(self.rate, dtype="float32")
        warmup = keras.ops.cast(self.warmup, dtype="float32")
        total = keras.ops.cast(self.total, dtype="float32")

        warmup_rate = rate * step / self.warmup
        cooldown_rate = rate * (total - step) / (total - warmup)
        triangular_rate = keras.ops.minimum(warmup_rate, cooldown_rate)
        return keras.ops.maximum(triangular_rate, 0.0)


def build_model():
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer=tokenizer, sequence_length=32
    )
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=32,
    )
    bert_classifier = keras_hub.models.BertClassifier(
        backbone=backbone, num_classes=3, preprocessor=preprocessor
    )

    # Get the total count of training batches.
    epochs = 3
    total_steps = (128 // 16) * epochs
    warmup_steps = int(total_steps * 0.2)

    bert_classifier.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.AdamW(TriangularSchedule(1e-4, warmup_steps, total_steps)),
        metrics=["accuracy"],
    )
    return bert_classifier


def _sentences(rng, n):
    lengths = rng.integers(3, 12, size=n)
    return np.array([" ".join(rng.choice(WORDS, size=k)) for k in lengths])


def _split(rng, n):
    hypothesis = _sentences(rng, n)
    premise = _sentences(rng, n)
    label = rng.integers(0, 3, size=n)
    return tf.data.Dataset.from_tensor_slices(((hypothesis, premise), label))


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
