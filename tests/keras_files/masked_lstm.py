"""Text classification as keras.io writes it: padded token ids, Embedding(mask_zero=True) and
an LSTM that the mask tells where each sequence ends. The mask is computed by a NotEqual op
that the exported model must keep."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [
            keras.Input((20,), dtype="int32"),
            keras.layers.Embedding(100, 8, mask_zero=True),
            keras.layers.LSTM(8),
            keras.layers.Dense(2),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 100, size=(640, 20)).astype("int32")
    lengths = rng.integers(5, 21, size=640)
    x[np.arange(20)[None, :] >= lengths[:, None]] = 0
    y = (x[:, 0] > 50).astype("int32")
    return (x[:512], y[:512]), (x[512:], y[512:])
