"""The keras.io "Simple MNIST convnet" (fchollet), as a tf_mgpu task: copy this file to start.

  python -m tf_mgpu.main --task=mnist_cnn --strategy=mirrored --num_cpu_devices=2 --epochs=2

A task is an ordinary Keras file: build_model() returns a compiled model and
load_data() returns (x_train, y_train), (x_test, y_test). tf_mgpu batches
(--batch_size per replica), shuffles (--seed), shards over replicas and
workers, and takes the optimizer, loss and metrics from compile().
keras.io trains this model with batch 128 for 15 epochs: 0.99 test accuracy.
"""

import keras
import numpy as np

from tf_mgpu.tasks.mnist import data

NUM_CLASSES = 10
INPUT_SHAPE = (28, 28, 1)


def build_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input(shape=INPUT_SHAPE),
            keras.layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            keras.layers.MaxPooling2D(pool_size=(2, 2)),
            keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            keras.layers.MaxPooling2D(pool_size=(2, 2)),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(NUM_CLASSES, activation="softmax"),
        ],
        name="mnist_cnn",
    )
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def load_data(config):
    # keras.datasets.mnist.load_data() downloads; TFDS reads --manual_dir offline.
    mnist = data.load(config.data_dir, config.manual_dir, config.train_split, config.test_split)

    def prepare(split):
        x = np.expand_dims(split.x.astype("float32") / 255, -1)  # (N, 28, 28, 1) in [0, 1]
        return x, keras.utils.to_categorical(split.y, NUM_CLASSES)

    return prepare(mnist.train), prepare(mnist.test)
