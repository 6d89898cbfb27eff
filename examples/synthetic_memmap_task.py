"""A small convnet on synthetic images read by index from NumPy memory-mapped files.

  python -m tf_mgpu.tools.synthetic --out=/tmp/synth --gigabytes=5
  SYNTHETIC_DIR=/tmp/synth/full python -m tf_mgpu.main \
      --task=examples/synthetic_memmap_task.py --epochs=1 --model_dir=/tmp/synth_memmap

An ordinary Keras file: build_model() returns a compiled model, and load_data()
returns, for each split, an object read by index (`__len__`, `__getitem__(i)` ->
(image, label)), so the images never need to fit in memory. SYNTHETIC_DIR names a
folder written by `tf_mgpu.tools.synthetic` (images.npy, labels.npy, meta.json).
If SYNTHETIC_READ_LOG names a folder, each process counts the bytes its readers
returned, per split, into <folder>/reads.<pid>.json (rewritten every 16 reads).
"""

import json
import os
import threading

import keras
import numpy as np

DIR = os.environ.get("SYNTHETIC_DIR", "/tmp/synth/full")
READ_LOG = os.environ.get("SYNTHETIC_READ_LOG")


def _meta() -> dict:
    path = os.path.join(DIR, "meta.json")
    if not os.path.exists(path):
        raise SystemExit(
            f"{os.path.basename(__file__)}: no {path}; write the data first with "
            f"`python -m tf_mgpu.tools.synthetic --out=/tmp/synth --gigabytes=1` and set "
            f"SYNTHETIC_DIR=/tmp/synth/full"
        )
    with open(path) as f:
        return json.load(f)


class ReadCounter:
    """Bytes and examples each split's readers returned in this process."""

    def __init__(self, folder: str):
        self.path = os.path.join(folder, f"reads.{os.getpid()}.json")
        self.counts: dict[str, list[int]] = {}
        self.lock = threading.Lock()

    def add(self, split: str, nbytes: int) -> None:
        with self.lock:
            count = self.counts.setdefault(split, [0, 0])
            count[0] += nbytes
            count[1] += 1
            if count[1] % 16 == 1:
                partial = f"{self.path}.tmp"
                with open(partial, "w") as f:
                    json.dump(
                        {k: {"bytes": b, "examples": n} for k, (b, n) in self.counts.items()}, f
                    )
                os.replace(partial, self.path)


COUNTER = ReadCounter(READ_LOG) if READ_LOG else None


class Images:
    """Rows start..stop of images.npy and labels.npy, one example per __getitem__."""

    def __init__(self, split: str, start: int, stop: int):
        self.images = np.load(os.path.join(DIR, "images.npy"), mmap_mode="r")
        self.labels = np.load(os.path.join(DIR, "labels.npy"), mmap_mode="r")
        self.split, self.start, self.stop = split, start, stop

    def __len__(self):
        return self.stop - self.start

    def __getitem__(self, i):
        row = self.start + int(i)
        image, label = np.array(self.images[row]), self.labels[row]
        if COUNTER is not None:
            COUNTER.add(self.split, image.nbytes + label.nbytes)
        return image, label


def build_model():
    meta = _meta()
    model = keras.Sequential(
        [
            keras.Input(shape=tuple(meta["shape"]), dtype="uint8"),
            keras.layers.Rescaling(1 / 255),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(meta["classes"]),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    meta = _meta()
    train, test = meta["train"], meta["test"]
    return Images("train", 0, train), Images("test", train, train + test)
