# keras-io: examples/vision/fixres.py
"""FixRes experiment 1 (ResNet50V2 from scratch, weights=None as in the example) on
synthetic tf_flowers-shaped data: 16x16 images scaled to [-1, 1] instead of 128x128,
int64 labels over 5 classes. The later fine-tuning stage (all frozen but post_bn) is
not part of the task."""

import keras
import numpy as np
from keras import layers

IMAGE_SIZE = 16


def get_training_model(num_classes=5):
    inputs = layers.Input((None, None, 3))
    resnet_base = keras.applications.ResNet50V2(include_top=False, weights=None, pooling="avg")
    resnet_base.trainable = True

    x = resnet_base(inputs)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def build_model():
    model = get_training_model()
    optimizer = "adam"
    model.compile(
        optimizer=optimizer,
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        image = rng.uniform(0, 255, (n, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32")
        image = (image - 127.5) / 127.5
        label = rng.integers(0, 5, (n,)).astype("int64")
        return image, label

    return split(128), split(64)
