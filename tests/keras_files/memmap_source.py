"""Splits read by index from NumPy memory-mapped files, as a dataset larger than memory is
read: load_data() returns objects with __len__ and __getitem__(i), not arrays. The files are
written once, under the temporary folder, from a fixed random teacher."""

import hashlib
import os
import tempfile

import keras
import numpy as np

ROWS, FEATURES = 1536, 16
LOG = os.environ.get("MEMMAP_READ_LOG")  # if set, a folder: each process logs what it reads
BAD = {}  # index -> what __getitem__ returns instead (tests)


class Memmap:
    """Rows start..stop of the x and y files, read one example at a time."""

    def __init__(self, folder: str, start: int, stop: int):
        self.x = np.load(os.path.join(folder, "x.npy"), mmap_mode="r")
        self.y = np.load(os.path.join(folder, "y.npy"), mmap_mode="r")
        self.start, self.stop = start, stop

    def __len__(self):
        return self.stop - self.start

    def __getitem__(self, i):
        row = self.start + int(i)
        if LOG:
            with open(os.path.join(LOG, f"reads.{os.getpid()}"), "a") as log:
                log.write(f"{row}\n")
        if row in BAD:
            return BAD[row]
        return np.asarray(self.x[row]), self.y[row]


def _folder() -> str:
    """The files, written atomically on first use (several processes may race to it)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, FEATURES)).astype("float32")
    y = (x @ rng.normal(size=(FEATURES, 3))).argmax(1).astype("int64")
    digest = hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f"memmap_source_{digest}")
    if not os.path.exists(os.path.join(folder, "y.npy")):
        os.makedirs(folder, exist_ok=True)
        for name, array in (("x", x), ("y", y)):
            partial = os.path.join(folder, f"{name}.{os.getpid()}.npy")
            np.save(partial, array)
            os.replace(partial, os.path.join(folder, f"{name}.npy"))
    return folder


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
    folder = _folder()
    return Memmap(folder, 0, 1024), Memmap(folder, 1024, 1280), Memmap(folder, 1280, ROWS)
