"""A model with two outputs: a house's price (regression) and whether it sells (binary).

One loss per output, loss weights, and metrics per output, AUC among them.
"""

import keras
import numpy as np


def build_model():
    features = keras.Input((12,), name="features")
    hidden = keras.layers.Dense(16, activation="relu")(features)
    price = keras.layers.Dense(1, name="price")(hidden)
    sold = keras.layers.Dense(1, activation="sigmoid", name="sold")(hidden)
    model = keras.Model(features, [price, sold])
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss={"price": "mse", "sold": "binary_crossentropy"},
        loss_weights={"price": 0.25, "sold": 1.0},
        metrics={"price": ["mae"], "sold": ["auc", "accuracy"]},
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 12)).astype("float32")
    price = (x @ rng.normal(size=12) / 3 + rng.normal(scale=0.3, size=1280)).astype("float32")
    sold = (x @ rng.normal(size=12) > 0.8).astype("float32")
    y = {"price": price, "sold": sold}
    train = {key: labels[:1024] for key, labels in y.items()}
    test = {key: labels[1024:] for key, labels in y.items()}
    return (x[:1024], train), (x[1024:], test)
