"""A model with two outputs, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/two_heads_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=32 --epochs=2 --model_dir=/tmp/heads

From one row of features it predicts a price (regression: mean squared error,
and the mean absolute error as a metric) and a kind among three (sparse
categorical cross-entropy and accuracy). The price's loss is weighted down so
that neither output drowns the other. Labels come as a dict keyed by the
outputs' names; the data comes from a fixed random teacher, so it needs no
download.
"""

import keras
import numpy as np

FEATURES = 12
KINDS = 3


def build_model():
    features = keras.Input((FEATURES,), name="features")
    hidden = keras.layers.Dense(32, activation="relu")(features)
    hidden = keras.layers.Dense(32, activation="relu")(hidden)
    price = keras.layers.Dense(1, name="price")(hidden)
    kind = keras.layers.Dense(KINDS, activation="softmax", name="kind")(hidden)
    model = keras.Model(features, [price, kind])
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss={"price": "mse", "kind": "sparse_categorical_crossentropy"},
        loss_weights={"price": 0.5, "kind": 1.0},
        metrics={"price": ["mae"], "kind": ["accuracy"]},
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, FEATURES)).astype("float32")
    price = x @ rng.normal(size=FEATURES) + rng.normal(scale=0.3, size=3000)
    kind = np.argmax(x @ rng.normal(size=(FEATURES, KINDS)), axis=1)
    y = {"price": price.astype("float32"), "kind": kind.astype("int64")}
    train = {name: labels[:2500] for name, labels in y.items()}
    test = {name: labels[2500:] for name, labels in y.items()}
    return (x[:2500], train), (x[2500:], test)
