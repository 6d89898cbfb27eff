"""The task of docs/quickstart.md: a small classifier on made-up data, nothing to download.

python -m tf_mgpu.main --task=examples/quickstart_task.py --model_dir=/tmp/quickstart
"""

import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(20,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12000, 20)).astype("float32")
    y = (x[:, :5].sum(axis=1) > x[:, 5:10].sum(axis=1)).astype("int64")
    return (x[:10000], y[:10000]), (x[10000:], y[10000:])
