"""Arrays memory-mapped from .npy files, as a dataset too large for the devices is given:
load_data() returns np.load(..., mmap_mode="r") arrays, which tf_mgpu never reads whole.
The files are written once into FOLDER from a fixed random teacher."""

import os
import tempfile

import keras
import numpy as np

ROWS, FEATURES = 1280, 16
FOLDER = os.path.join(tempfile.gettempdir(), "memmap_arrays")  # tests set their own
NAN_AT = None  # a row of x_train to make NaN (tests)


def _write(folder: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, FEATURES)).astype("float32")
    y = (x @ rng.normal(size=(FEATURES, 3))).argmax(1).astype("int64")
    if NAN_AT is not None:
        x[NAN_AT] = np.nan
    os.makedirs(folder, exist_ok=True)
    for name, array in (("x", x), ("y", y)):
        np.save(os.path.join(folder, f"{name}.npy"), array)


def build_model():
    model = keras.Sequential(
        [keras.Input((FEATURES,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    if not os.path.exists(os.path.join(FOLDER, "y.npy")):
        _write(FOLDER)
    x = np.load(os.path.join(FOLDER, "x.npy"), mmap_mode="r")
    y = np.load(os.path.join(FOLDER, "y.npy"), mmap_mode="r")
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
