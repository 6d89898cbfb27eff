# keras-io: examples/vision/convmixer.py
"""ConvMixer on CIFAR-10: synthetic uint8 16x16x3 images with uint8 labels 0-9 of shape (n, 1)
in place of the CIFAR-10 download (32x32); filters cut from 256 to 16 and depth from 8 to 2;
keras.optimizers.AdamW in place of tfa.optimizers.AdamW (TensorFlow Addons is not
installed); its RandomCrop/RandomFlip augmentation, which runs in its tf.data pipeline and
not in the model, is not kept."""

import keras
import numpy as np
from keras import layers


def activation_block(x):
    x = layers.Activation("gelu")(x)
    return layers.BatchNormalization()(x)


def conv_stem(x, filters: int, patch_size: int):
    x = layers.Conv2D(filters, kernel_size=patch_size, strides=patch_size)(x)
    return activation_block(x)


def conv_mixer_block(x, filters: int, kernel_size: int):
    # Depthwise convolution.
    x0 = x
    x = layers.Conv2D(filters, kernel_size=kernel_size, groups=filters, padding="same")(x)
    x = layers.Add()([activation_block(x), x0])  # Residual.

    # Pointwise convolution.
    x = layers.Conv2D(filters, kernel_size=1)(x)
    x = activation_block(x)

    return x


def get_conv_mixer_256_8(
    image_size=16, filters=16, depth=2, kernel_size=5, patch_size=2, num_classes=10
):
    """ConvMixer-256/8: https://openreview.net/pdf?id=TVHS5Y4dNvM.

    The hyperparameter values are taken from the paper.
    """
    inputs = keras.Input((image_size, image_size, 3))
    x = layers.Rescaling(scale=1.0 / 255)(inputs)

    # Extract patch embeddings.
    x = conv_stem(x, filters, patch_size)

    # ConvMixer blocks.
    for _ in range(depth):
        x = conv_mixer_block(x, filters, kernel_size)

    # Classification block.
    x = layers.GlobalAvgPool2D()(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)

    return keras.Model(inputs, outputs)


def build_model():
    model = get_conv_mixer_256_8()
    optimizer = keras.optimizers.AdamW(learning_rate=0.001, weight_decay=0.0001)

    model.compile(
        optimizer=optimizer,
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 16, 16, 3), dtype=np.uint8)
        y = rng.integers(0, 10, size=(n, 1), dtype=np.uint8)
        return x, y

    return split(128), split(64)
