"""Categorical strings hashed into integer ids inside the model, as keras.io's structured-data
examples do: `Hashing(output_mode="int")` (an integer-output layer), an Embedding, Adam."""

import keras
import numpy as np

BINS = 32


def build_model():
    city = keras.Input((1,), dtype="string", name="city")
    ids = keras.layers.Hashing(num_bins=BINS, output_mode="int")(city)
    vectors = keras.layers.Flatten()(keras.layers.Embedding(BINS, 4)(ids))
    outputs = keras.layers.Dense(2)(vectors)
    model = keras.Model(city, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    names = np.array([f"city{i}" for i in range(40)])
    picked = rng.integers(0, 40, size=192)
    x = names[picked][:, None]
    y = (picked % 3 == 0).astype("int64")
    return (x[:128], y[:128]), (x[128:], y[128:])
