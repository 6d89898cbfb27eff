"""A binary classifier whose metrics are given twice: as `metrics` (unweighted) and as
`weighted_metrics` (weighted by each example's sample weight, and in training by the class
weights too, as Keras's `fit` weights them).

Keras names a weighted metric whose name an unweighted one took `weighted_<name>`:
this model reports auc, accuracy, weighted_auc, weighted_accuracy and mae.
"""

import keras
import numpy as np

CLASS_WEIGHT = {0: 1.0, 1: 3.0}  # about 1 positive in 5
LEARNING_RATE = 0.1


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(LEARNING_RATE),
        loss="binary_crossentropy",
        metrics=["auc", "accuracy"],
        weighted_metrics=["auc", "accuracy", "mae"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=16) > 1.0).astype("float32")
    # Heavier where the first feature is positive, so weighted and unweighted figures differ.
    w = rng.uniform(0.1, 1.0, size=1280) * np.where(x[:, 0] > 0, 4.0, 1.0)
    w = w.astype("float32")
    return (x[:1024], y[:1024], w[:1024]), (x[1024:], y[1024:], w[1024:])
