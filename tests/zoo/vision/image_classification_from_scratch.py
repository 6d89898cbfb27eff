# keras-io: examples/vision/image_classification_from_scratch.py
"""The small Xception-like network on synthetic Cats-vs-Dogs-shaped data: 32x32 float
images in [0, 255] instead of 180x180, int32 labels 0/1; every width divided by 8. The
augmentation of the example runs in its tf.data pipeline, outside the model, and its only
callback writes checkpoints, so neither is part of the task."""

import keras
import numpy as np
from keras import layers

image_size = (32, 32)
W = 8  # every width is divided by W


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)

    # Entry block
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(32 // W, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.Conv2D(64 // W, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    for size in [128 // W, 256 // W, 512 // W, 728 // W]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    x = layers.SeparableConv2D(1024 // W, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        activation = "sigmoid"
        units = 1
    else:
        activation = "softmax"
        units = num_classes

    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(units, activation=activation)(x)
    return keras.Model(inputs, outputs)


def build_model():
    model = make_model(input_shape=(*image_size, 3), num_classes=2)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="binary_crossentropy",
        metrics=["accuracy"],
        jit_compile=True,  # Enable XLA compilation for faster execution
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 255, (n, *image_size, 3)).astype("float32")
        labels = rng.integers(0, 2, (n,)).astype("int32")
        return images, labels

    return split(128), split(64)
