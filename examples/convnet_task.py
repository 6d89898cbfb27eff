"""A small MNIST convnet, written as any Keras user writes one: a tf_mgpu task.

  python -m tf_mgpu.main --task=examples/convnet_task.py --strategy=mirrored --epochs=2 \
      --nojit_compile --model_dir=/tmp/convnet

It knows nothing of tf_mgpu: build_model() returns a compiled Keras model and
load_data() returns NumPy arrays. MNIST_DIR names a folder with the four
original MNIST .gz files (default: ../shared/datasets/mnist beside this
repository); MNIST_TRAIN and MNIST_TEST cut the splits to their first N
examples (default: all).
"""

import gzip
import os

import keras
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST_DIR = os.environ.get(
    "MNIST_DIR", os.path.join(HERE, "..", "..", "shared", "datasets", "mnist")
)


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def _read(images_file, labels_file, count):
    with gzip.open(os.path.join(MNIST_DIR, images_file)) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)
    with gzip.open(os.path.join(MNIST_DIR, labels_file)) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    count = int(count) if count else len(labels)
    return images[:count].astype("float32") / 255.0, labels[:count].astype("int64")


def load_data():
    train = _read(
        "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", os.environ.get("MNIST_TRAIN")
    )
    test = _read(
        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", os.environ.get("MNIST_TEST")
    )
    return train, test
