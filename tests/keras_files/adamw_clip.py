"""AdamW with gradient clipping: `CLIP` is one of Keras's optimizer arguments
(clipnorm, global_clipnorm or clipvalue), set low enough that it clips often."""

import keras
import numpy as np

CLIP = {"clipnorm": 0.05}


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-2, weight_decay=1e-3, **CLIP),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
