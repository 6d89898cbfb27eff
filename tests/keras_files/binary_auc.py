"""A binary classifier with AUC, Precision and Recall, on imbalanced synthetic data."""

import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="binary_crossentropy",
        metrics=["auc", keras.metrics.Precision(name="precision"), "recall", "accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=16) > 1.0).astype("float32")  # about 1 positive in 5
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
