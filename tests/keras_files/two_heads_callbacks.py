"""Two heads (a price and whether it is high), a stateful metric on one, loss weights, and
callbacks that change the rate: the features of issue 22 together, as a user writes them."""

import keras
import numpy as np


def build_model():
    x = keras.Input((12,), name="features")
    hidden = keras.layers.Dense(24, activation="relu")(x)
    price = keras.layers.Dense(1, name="price")(hidden)
    high = keras.layers.Dense(1, activation="sigmoid", name="high")(hidden)
    model = keras.Model(x, {"price": price, "high": high})
    model.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss={"price": "mse", "high": "binary_crossentropy"},
        loss_weights={"price": 0.5, "high": 1.0},
        metrics={"price": ["mae"], "high": ["auc", "accuracy"]},
    )
    return model


def callbacks():
    return [
        keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate * 0.9 if epoch else rate),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=0, min_delta=1),
    ]


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 12)).astype("float32")
    price = (x @ rng.normal(size=12) + 0.1 * rng.normal(size=1280)).astype("float32")
    y = {"price": price, "high": (price > 0.5).astype("float32")}
    train = (x[:1024], {k: v[:1024] for k, v in y.items()})
    test = (x[1024:], {k: v[1024:] for k, v in y.items()})
    return train, test
