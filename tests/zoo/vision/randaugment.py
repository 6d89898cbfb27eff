# keras-io: examples/vision/randaugment.py
"""The RandAugment example's classifier (the model trained on the RandAugment-augmented
data) on synthetic CIFAR-10-shaped data (float32 images in 0-255, labels 0-9) in place
of the download and the imgaug RandAugment pipeline; image side 72 -> 32; ResNet50V2
(weights=None) cut to a ResNetV2 of two blocks per stage (3/4/6/3 -> 2/2/2/2) and
filters 64/128/256/512 -> 8/16/32/64, built by Keras's own ResNet builder
(keras.src.applications.resnet); layers.experimental.preprocessing -> layers."""

import numpy as np
import tensorflow as tf
from keras.src.applications import resnet
from tensorflow.keras import layers

IMAGE_SIZE = 32


def ResNet50V2(include_top, weights, input_shape, classes):  # noqa: N802 (Keras's name)
    def stack_fn(x):
        x = resnet.stack_residual_blocks_v2(x, 8, 2, name="conv2")
        x = resnet.stack_residual_blocks_v2(x, 16, 2, name="conv3")
        x = resnet.stack_residual_blocks_v2(x, 32, 2, name="conv4")
        return resnet.stack_residual_blocks_v2(x, 64, 2, stride1=1, name="conv5")

    return resnet.ResNet(
        stack_fn,
        True,
        True,
        name="resnet50v2",
        include_top=include_top,
        weights=weights,
        input_shape=input_shape,
        classes=classes,
    )


def get_training_model():
    resnet50_v2 = ResNet50V2(
        weights=None, include_top=True, input_shape=(IMAGE_SIZE, IMAGE_SIZE, 3), classes=10
    )
    model = tf.keras.Sequential(
        [
            layers.Input((IMAGE_SIZE, IMAGE_SIZE, 3)),
            layers.Rescaling(scale=1.0 / 127.5, offset=-1),
            resnet50_v2,
        ]
    )
    return model


def build_model():
    rand_aug_model = get_training_model()
    rand_aug_model.compile(
        loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"]
    )
    return rand_aug_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32")
        y = rng.integers(0, 10, size=(n, 1)).astype("uint8")
        return x, y

    return split(128), split(64)
