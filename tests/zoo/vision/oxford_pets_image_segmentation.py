# keras-io: examples/vision/oxford_pets_image_segmentation.py
"""U-Net-like segmentation on Oxford Pets: synthetic 32x32x3 float images in [0, 255] with
uint8 per-pixel masks in {0, 1, 2} in place of the downloaded images and trimaps (160x160);
the block widths cut from 32/64/128/256 to 8/16/32/64; the ModelCheckpoint callback (it
only writes a file) left out."""

import keras
import numpy as np
from keras import layers

img_size = (32, 32)
num_classes = 3


def get_model(img_size, num_classes):
    inputs = keras.Input(shape=img_size + (3,))  # noqa: RUF005

    ### [First half of the network: downsampling inputs] ###

    # Entry block
    x = layers.Conv2D(8, 3, strides=2, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    # Blocks 1, 2, 3 are identical apart from the feature depth.
    for filters in [16, 32, 64]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    ### [Second half of the network: upsampling inputs] ###

    for filters in [64, 32, 16, 8]:
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.UpSampling2D(2)(x)

        # Project residual
        residual = layers.UpSampling2D(2)(previous_block_activation)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    # Add a per-pixel classification layer
    outputs = layers.Conv2D(num_classes, 3, activation="softmax", padding="same")(x)

    # Define the model
    model = keras.Model(inputs, outputs)
    return model


def build_model():
    model = get_model(img_size, num_classes)
    # We use the "sparse" version of categorical_crossentropy
    # because our target data is integers.
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy")
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, *img_size, 3)).astype("float32")
        y = rng.integers(0, num_classes, size=(n, *img_size, 1)).astype("uint8")
        return x, y

    return split(128), split(64)
