# keras-io: examples/vision/cutmix.py
"""ResNet-20 trained on CutMix-augmented CIFAR-10: synthetic float32 32x32x3 images in [0, 1]
with soft labels (lambda * one-hot + (1 - lambda) * another one-hot over 10 classes, as its
cutmix() gives them) for training and one-hot labels for testing, in place of the CIFAR-10
download mixed by its tf.data pipeline; depth cut from 20 to 8 (one residual block a stack),
widths as the example has them."""

import keras
import numpy as np

IMG_SIZE = 32


def resnet_layer(
    inputs,
    num_filters=16,
    kernel_size=3,
    strides=1,
    activation="relu",
    batch_normalization=True,
    conv_first=True,
):
    conv = keras.layers.Conv2D(
        num_filters,
        kernel_size=kernel_size,
        strides=strides,
        padding="same",
        kernel_initializer="he_normal",
        kernel_regularizer=keras.regularizers.l2(1e-4),
    )
    x = inputs
    if conv_first:
        x = conv(x)
        if batch_normalization:
            x = keras.layers.BatchNormalization()(x)
        if activation is not None:
            x = keras.layers.Activation(activation)(x)
    else:
        if batch_normalization:
            x = keras.layers.BatchNormalization()(x)
        if activation is not None:
            x = keras.layers.Activation(activation)(x)
        x = conv(x)
    return x


def resnet_v20(input_shape, depth, num_classes=10):
    if (depth - 2) % 6 != 0:
        raise ValueError("depth should be 6n+2 (eg 20, 32, 44 in [a])")
    # Start model definition.
    num_filters = 16
    num_res_blocks = int((depth - 2) / 6)

    inputs = keras.layers.Input(shape=input_shape)
    x = resnet_layer(inputs=inputs)
    # Instantiate the stack of residual units
    for stack in range(3):
        for res_block in range(num_res_blocks):
            strides = 1
            if stack > 0 and res_block == 0:  # first layer but not first stack
                strides = 2  # downsample
            y = resnet_layer(inputs=x, num_filters=num_filters, strides=strides)
            y = resnet_layer(inputs=y, num_filters=num_filters, activation=None)
            if stack > 0 and res_block == 0:  # first layer but not first stack
                # linear projection residual shortcut connection to match
                # changed dims
                x = resnet_layer(
                    inputs=x,
                    num_filters=num_filters,
                    kernel_size=1,
                    strides=strides,
                    activation=None,
                    batch_normalization=False,
                )
            x = keras.layers.add([x, y])
            x = keras.layers.Activation("relu")(x)
        num_filters *= 2

    # Add classifier on top.
    # v1 does not use BN after last shortcut connection-ReLU
    x = keras.layers.AveragePooling2D(pool_size=8)(x)
    y = keras.layers.Flatten()(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", kernel_initializer="he_normal")(
        y
    )

    # Instantiate model.
    model = keras.models.Model(inputs=inputs, outputs=outputs)
    return model


def training_model():
    return resnet_v20((32, 32, 3), 8)


def build_model():
    model = training_model()
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    eye = np.eye(10, dtype="float32")

    def images(n):
        return rng.random((n, IMG_SIZE, IMG_SIZE, 3), dtype=np.float32)

    lambda_value = rng.beta(0.25, 0.25, size=(128, 1)).astype("float32")
    label1 = eye[rng.integers(0, 10, size=128)]
    label2 = eye[rng.integers(0, 10, size=128)]
    train = images(128), lambda_value * label1 + (1 - lambda_value) * label2
    test = images(64), eye[rng.integers(0, 10, size=64)]
    return train, test
