# keras-io: examples/nlp/multiple_choice_task_with_transfer_learning.py
"""Adapted: keras_hub in place of keras_nlp; a DebertaV3Classifier built from a small
DebertaV3Backbone config (vocabulary 128100 -> 1000, 6 -> 1 layer, 6 -> 2 heads, hidden
384 -> 32, intermediate 1536 -> 64, bucket_size 256 -> 16) in place of the
"deberta_v3_extra_small_en" preset; synthetic DebertaV3Preprocessor-style ids for the 4
options and one-hot labels in place of SWAG; sequence_length 200 -> 32. The option_shuffle
augmentation (a tf.data map) is not kept; the LearningRateScheduler callback is, the
ModelCheckpoint (a file write) is not."""

import math

import keras
import keras_hub
import numpy as np


class CFG:
    sequence_length = 32  # Input sequence length
    seed = 42  # Random seed
    batch_size = 8  # Batch size


VOCABULARY_SIZE = 1000
PAD, CLS, SEP = 0, 1, 2  # DebertaV3Tokenizer's special token ids


def get_lr_callback(batch_size=8, mode="cos", epochs=10, plot=False):
    lr_start, lr_max, lr_min = 1.0e-6, 0.6e-6 * batch_size, 1e-6
    lr_ramp_ep, lr_sus_ep = 2, 0

    def lrfn(epoch):  # Learning rate update function
        if epoch < lr_ramp_ep:
            lr = (lr_max - lr_start) / lr_ramp_ep * epoch + lr_start
        elif epoch < lr_ramp_ep + lr_sus_ep:
            lr = lr_max
        else:
            decay_total_epochs, decay_epoch_index = (
                epochs - lr_ramp_ep - lr_sus_ep + 3,
                epoch - lr_ramp_ep - lr_sus_ep,
            )
            phase = math.pi * decay_epoch_index / decay_total_epochs
            lr = (lr_max - lr_min) * 0.5 * (1 + math.cos(phase)) + lr_min
        return lr

    return keras.callbacks.LearningRateScheduler(lrfn, verbose=False)  # Create lr callback


def callbacks():
    return [get_lr_callback(CFG.batch_size)]


# Selects one option from five
@keras.saving.register_keras_serializable(package="zoo_multiple_choice_task_with_transfer_learning")
class SelectOption(keras.layers.Layer):
    def __init__(self, index, **kwargs):
        super().__init__(**kwargs)
        self.index = index

    def call(self, inputs):
        # Selects a specific slice from the inputs tensor
        return inputs[:, self.index, :]

    def get_config(self):
        # For serialize the model
        base_config = super().get_config()
        config = {
            "index": self.index,
        }
        return {**base_config, **config}


def build_model():
    # Define input layers
    inputs = {
        "token_ids": keras.Input(shape=(4, None), dtype="int32", name="token_ids"),
        "padding_mask": keras.Input(shape=(4, None), dtype="int32", name="padding_mask"),
    }
    # Create a DebertaV3Classifier model
    backbone = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=CFG.sequence_length,
        bucket_size=16,
    )
    classifier = keras_hub.models.DebertaV3Classifier(
        backbone,
        preprocessor=None,
        num_classes=1,  # one output per one option, for five options total 5 outputs
    )
    logits = []
    # Loop through each option (Q+A), (Q+B) etc and compute associted logits
    for option_idx in range(4):
        option = {
            k: SelectOption(option_idx, name=f"{k}_{option_idx}")(v) for k, v in inputs.items()
        }
        logit = classifier(option)
        logits.append(logit)

    # Compute final output
    logits = keras.layers.Concatenate(axis=-1)(logits)
    outputs = keras.layers.Softmax(axis=-1)(logits)
    model = keras.Model(inputs, outputs)

    # Compile the model with optimizer, loss, and metrics
    model.compile(
        optimizer=keras.optimizers.AdamW(5e-6),
        loss=keras.losses.CategoricalCrossentropy(label_smoothing=0.02),
        metrics=[
            keras.metrics.CategoricalAccuracy(name="accuracy"),
        ],
        jit_compile=True,
    )
    return model


def _split(rng, n):
    """[CLS] start phrase + ending [SEP] [PAD]... for each of the 4 options."""
    length = CFG.sequence_length
    token_ids = np.full((n, 4, length), PAD, dtype=np.int32)
    for i in range(n):
        start = rng.integers(4, VOCABULARY_SIZE, size=rng.integers(4, 16))
        for j in range(4):
            ending = rng.integers(4, VOCABULARY_SIZE, size=rng.integers(2, length - 1 - len(start)))
            ids = np.concatenate([[CLS], start, ending, [SEP]])
            token_ids[i, j, : len(ids)] = ids
    x = {"token_ids": token_ids, "padding_mask": (token_ids != PAD).astype(np.int32)}
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=n)]
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
