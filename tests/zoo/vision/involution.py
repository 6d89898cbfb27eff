# keras-io: examples/vision/involution.py
"""The involution model of the example (its convolution baseline is not part of the task)
on synthetic CIFAR-10-shaped data: float64 32x32 images in [0, 1] (uint8 / 255.0 as in the
example), uint8 labels of shape (n, 1); sizes as in the example. Involution takes **kwargs
and has a get_config so that it can be reloaded."""

import keras
import numpy as np
import tensorflow as tf


@keras.saving.register_keras_serializable(package="zoo_involution")
class Involution(keras.layers.Layer):
    def __init__(self, channel, group_number, kernel_size, stride, reduction_ratio, name, **kwargs):
        super().__init__(name=name, **kwargs)

        # Initialize the parameters.
        self.channel = channel
        self.group_number = group_number
        self.kernel_size = kernel_size
        self.stride = stride
        self.reduction_ratio = reduction_ratio

    def build(self, input_shape):
        # Get the shape of the input.
        (_, height, width, num_channels) = input_shape

        # Scale the height and width with respect to the strides.
        height = height // self.stride
        width = width // self.stride

        # Define a layer that average pools the input tensor
        # if stride is more than 1.
        self.stride_layer = (
            keras.layers.AveragePooling2D(
                pool_size=self.stride, strides=self.stride, padding="same"
            )
            if self.stride > 1
            else tf.identity
        )
        # Define the kernel generation layer.
        self.kernel_gen = keras.Sequential(
            [
                keras.layers.Conv2D(filters=self.channel // self.reduction_ratio, kernel_size=1),
                keras.layers.BatchNormalization(),
                keras.layers.ReLU(),
                keras.layers.Conv2D(
                    filters=self.kernel_size * self.kernel_size * self.group_number,
                    kernel_size=1,
                ),
            ]
        )
        # Define reshape layers
        self.kernel_reshape = keras.layers.Reshape(
            target_shape=(
                height,
                width,
                self.kernel_size * self.kernel_size,
                1,
                self.group_number,
            )
        )
        self.input_patches_reshape = keras.layers.Reshape(
            target_shape=(
                height,
                width,
                self.kernel_size * self.kernel_size,
                num_channels // self.group_number,
                self.group_number,
            )
        )
        self.output_reshape = keras.layers.Reshape(target_shape=(height, width, num_channels))

    def call(self, x):
        # Generate the kernel with respect to the input tensor.
        # B, H, W, K*K*G
        kernel_input = self.stride_layer(x)
        kernel = self.kernel_gen(kernel_input)

        # reshape the kerenl
        # B, H, W, K*K, 1, G
        kernel = self.kernel_reshape(kernel)

        # Extract input patches.
        # B, H, W, K*K*C
        input_patches = tf.image.extract_patches(
            images=x,
            sizes=[1, self.kernel_size, self.kernel_size, 1],
            strides=[1, self.stride, self.stride, 1],
            rates=[1, 1, 1, 1],
            padding="SAME",
        )

        # Reshape the input patches to align with later operations.
        # B, H, W, K*K, C//G, G
        input_patches = self.input_patches_reshape(input_patches)

        # Compute the multiply-add operation of kernels and patches.
        # B, H, W, K*K, C//G, G
        output = tf.multiply(kernel, input_patches)
        # B, H, W, C//G, G
        output = tf.reduce_sum(output, axis=3)

        # Reshape the output kernel.
        # B, H, W, C
        output = self.output_reshape(output)

        # Return the output tensor and the kernel.
        return output, kernel

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "channel": self.channel,
                "group_number": self.group_number,
                "kernel_size": self.kernel_size,
                "stride": self.stride,
                "reduction_ratio": self.reduction_ratio,
            }
        )
        return config


def build_model():
    inputs = keras.Input(shape=(32, 32, 3))
    x, _ = Involution(
        channel=3,
        group_number=1,
        kernel_size=3,
        stride=1,
        reduction_ratio=2,
        name="inv_1",
    )(inputs)
    x = keras.layers.ReLU()(x)
    x = keras.layers.MaxPooling2D((2, 2))(x)
    x, _ = Involution(
        channel=3,
        group_number=1,
        kernel_size=3,
        stride=1,
        reduction_ratio=2,
        name="inv_2",
    )(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.MaxPooling2D((2, 2))(x)
    x, _ = Involution(
        channel=3,
        group_number=1,
        kernel_size=3,
        stride=1,
        reduction_ratio=2,
        name="inv_3",
    )(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)

    inv_model = keras.Model(inputs=[inputs], outputs=[outputs], name="inv_model")

    # Compile the mode with the necessary loss function and optimizer.
    inv_model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return inv_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8") / 255.0
        labels = rng.integers(0, 10, (n, 1)).astype("uint8")
        return images, labels

    return split(128), split(64)
