# keras-io: examples/vision/learnable_resizer.py
"""Learnable image resizer in front of DenseNet-121 on Cats vs Dogs: synthetic 64x64x3
float images in [0, 255] (resized to 32x32 by the learnable resizer) with one-hot labels
over 2 classes in place of the TFDS download (300x300 resized to 150x150); the
DenseNet-121 backbone (weights=None, as in the example) built by Keras's own DenseNet
builder with one layer per dense block ([1, 1, 1, 1]) in place of [6, 12, 24, 16]."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers
from keras.src.applications import densenet

INP_SIZE = (64, 64)
TARGET_SIZE = (32, 32)
INTERPOLATION = "bilinear"


def conv_block(x, filters, kernel_size, strides, activation=layers.LeakyReLU(0.2)):  # noqa: B008
    x = layers.Conv2D(filters, kernel_size, strides, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    if activation:
        x = activation(x)
    return x


def res_block(x):
    inputs = x
    x = conv_block(x, 16, 3, 1)
    x = conv_block(x, 16, 3, 1, activation=None)
    return layers.Add()([inputs, x])


# Note: User can change num_res_blocks to >1 also if needed
def get_learnable_resizer(filters=16, num_res_blocks=1, interpolation=INTERPOLATION):
    inputs = layers.Input(shape=[None, None, 3])

    # First, perform naive resizing.
    naive_resize = layers.Resizing(*TARGET_SIZE, interpolation=interpolation)(inputs)

    # First convolution block without batch normalization.
    x = layers.Conv2D(filters=filters, kernel_size=7, strides=1, padding="same")(inputs)
    x = layers.LeakyReLU(0.2)(x)

    # Second convolution block with batch normalization.
    x = layers.Conv2D(filters=filters, kernel_size=1, strides=1, padding="same")(x)
    x = layers.LeakyReLU(0.2)(x)
    x = layers.BatchNormalization()(x)

    # Intermediate resizing as a bottleneck.
    bottleneck = layers.Resizing(*TARGET_SIZE, interpolation=interpolation)(x)

    # Residual passes.
    # First res_block will get bottleneck output as input
    x = res_block(bottleneck)
    # Remaining res_blocks will get previous res_block output as input
    for _ in range(num_res_blocks - 1):
        x = res_block(x)

    # Projection.
    x = layers.Conv2D(filters=filters, kernel_size=3, strides=1, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)

    # Skip connection.
    x = layers.Add()([bottleneck, x])

    # Final resized image.
    x = layers.Conv2D(filters=3, kernel_size=7, strides=1, padding="same")(x)
    final_resize = layers.Add()([naive_resize, x])

    return tf.keras.Model(inputs, final_resize, name="learnable_resizer")


def get_model():
    learnable_resizer = get_learnable_resizer()
    backbone = densenet.DenseNet(
        [1, 1, 1, 1],
        weights=None,
        include_top=True,
        classes=2,
        input_shape=((TARGET_SIZE[0], TARGET_SIZE[1], 3)),
        name="densenet121",
    )
    backbone.trainable = True

    inputs = layers.Input((INP_SIZE[0], INP_SIZE[1], 3))
    x = layers.Rescaling(scale=1.0 / 255)(inputs)
    x = learnable_resizer(x)
    outputs = backbone(x)

    return tf.keras.Model(inputs, outputs)


def build_model():
    model = get_model()
    model.compile(
        loss=keras.losses.CategoricalCrossentropy(label_smoothing=0.1),
        optimizer="sgd",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 255, size=(n, *INP_SIZE, 3)).astype("float32")
        labels = tf.one_hot(rng.integers(0, 2, size=n), depth=2).numpy()
        return images, labels

    return split(128), split(64)
