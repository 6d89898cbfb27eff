"""A small MNIST convnet, written as any Keras user writes one: a tf_mgpu task.

  python -m tf_mgpu.main --task=examples/convnet_task.py --strategy=mirrored --epochs=2 \
      --nojit_compile --model_dir=/tmp/convnet

It knows nothing of tf_mgpu: build_model() returns a compiled Keras model and
load_data() returns NumPy arrays. MNIST_DIR names a folder with the four
original MNIST .gz files (default: ../shared/datasets/mnist beside this
repository; without it, Keras downloads MNIST once into ~/.keras/datasets, as
the keras.io examples do); MNIST_TRAIN and MNIST_TEST cut the splits to their
first N examples (default: all).
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


def _read(images_file, labels_file):
    paths = [os.path.join(MNIST_DIR, name) for name in (images_file, labels_file)]
    for path in paths:
        if not os.path.exists(path):
            raise SystemExit(
                f"convnet_task.py: no {path}; set MNIST_DIR to a folder with the "
                "four MNIST .gz files, or unset it to download them with Keras"
            )
    with gzip.open(paths[0]) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(paths[1]) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def _cut(images, labels, count):
    count = int(count) if count else len(labels)
    return images[:count].reshape(-1, 28, 28, 1).astype("float32") / 255.0, labels[:count]


def load_data():
    if "MNIST_DIR" not in os.environ and not os.path.isdir(MNIST_DIR):
        (x, y), (x_test, y_test) = keras.datasets.mnist.load_data()
    else:
        x, y = _read("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
        x_test, y_test = _read("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    train = _cut(x, y.astype("int64"), os.environ.get("MNIST_TRAIN"))
    test = _cut(x_test, y_test.astype("int64"), os.environ.get("MNIST_TEST"))
    return train, test
