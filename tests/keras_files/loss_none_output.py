"""Two outputs, one compiled with loss None, as keras.io's "Text generation with a miniature
GPT" writes it: the model returns the logits and its last hidden states, compiled with
`loss=[loss_fn, None]`, and `fit` is given one label array, for the logits."""

import keras
import numpy as np

VOCABULARY, LENGTH = 40, 10


def build_model():
    inputs = keras.layers.Input(shape=(LENGTH,), dtype="int32")
    x = keras.layers.Embedding(VOCABULARY, 16)(inputs)
    x = keras.layers.Dense(16, activation="relu")(x)
    outputs = keras.layers.Dense(VOCABULARY)(x)
    model = keras.Model(inputs=inputs, outputs=[outputs, x])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.SGD(0.5), loss=[loss_fn, None])
    return model


def load_data():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCABULARY, size=(200, LENGTH + 1)).astype("int32")
    x, y = ids[:, :-1], ids[:, 1:]
    return (x[:128], y[:128]), (x[128:], y[128:])
