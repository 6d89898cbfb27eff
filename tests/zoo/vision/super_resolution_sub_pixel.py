# keras-io: examples/vision/super_resolution_sub_pixel.py
"""ESPCN super-resolution on BSDS500: synthetic RGB images in [0, 1] in place of the
download, turned into (low-resolution, high-resolution) Y-channel pairs by the example's
own process_input and process_target; crop_size 30 in place of 300 (so 10x10 inputs and
30x30 targets, upscale_factor 3 as written); tf.nn.depth_to_space wrapped in a registered
DepthToSpace layer (Keras 3 does not take a raw tf op on a symbolic tensor); the
EarlyStopping callback kept, the PSNR-plotting and checkpoint callbacks (they read and
write files) and the validation data left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

crop_size = 30
upscale_factor = 3
batch_size = 4


# Use TF Ops to process.
def process_input(input, crop_size, upscale_factor):
    input = tf.image.rgb_to_yuv(input)
    last_dimension_axis = len(input.shape) - 1
    y, u, v = tf.split(input, 3, axis=last_dimension_axis)  # noqa: RUF059 (as in the example)
    crop_size = crop_size // upscale_factor
    return tf.image.resize(y, [crop_size, crop_size], method="area")


def process_target(input):
    input = tf.image.rgb_to_yuv(input)
    last_dimension_axis = len(input.shape) - 1
    y, u, v = tf.split(input, 3, axis=last_dimension_axis)  # noqa: RUF059 (as in the example)
    return y


input_img_size = (crop_size // upscale_factor, crop_size // upscale_factor)
target_img_size = (crop_size, crop_size)
channels = 1


@keras.saving.register_keras_serializable(package="zoo_super_resolution_sub_pixel")
class DepthToSpace(layers.Layer):
    def __init__(self, block_size, **kwargs):
        super().__init__(**kwargs)
        self.block_size = block_size

    def call(self, input):
        return tf.nn.depth_to_space(input, self.block_size)

    def get_config(self):
        config = super().get_config()
        config.update({"block_size": self.block_size})
        return config


def get_model(upscale_factor=3, channels=1):
    conv_args = {
        "activation": "relu",
        "kernel_initializer": "Orthogonal",
        "padding": "same",
    }
    inputs = keras.Input(shape=input_img_size + (channels,))  # noqa: RUF005 (as in the example)
    x = layers.Conv2D(64, 5, **conv_args)(inputs)
    x = layers.Conv2D(64, 3, **conv_args)(x)
    x = layers.Conv2D(32, 3, **conv_args)(x)
    x = layers.Conv2D(channels * (upscale_factor**2), 3, **conv_args)(x)
    outputs = DepthToSpace(upscale_factor)(x)

    return keras.Model(inputs, outputs)


def build_model():
    model = get_model(upscale_factor=upscale_factor, channels=channels)
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.Adam(learning_rate=0.001)
    model.compile(
        optimizer=optimizer,
        loss=loss_fn,
    )
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(monitor="loss", patience=10)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        # Scale from (0, 255) to (0, 1)
        images = rng.integers(0, 256, size=(n, crop_size, crop_size, 3)).astype("float32") / 255.0
        x = process_input(images, crop_size, upscale_factor).numpy()
        y = process_target(images).numpy()
        return x, y

    return split(128), split(64)
