# keras-io: examples/vision/image_enhancer.py
"""The U-Net denoiser (ResNet50V2 encoder with weights=None, sub-pixel decoder) on
synthetic document-image pairs: 32x32 images instead of 352x608, both source and target
passed through resnet_v2.preprocess_input as in the example; decoder target_channels
32/16/8 instead of 128/64/32. In Keras 3 the encoder's input layer is no longer named
"input_1", so d0 is base_model.input; tf.concat on symbolic tensors became keras.ops.concatenate
and tf.nn.depth_to_space is wrapped in a small registered layer. Of the callbacks only
EarlyStopping changes training; the checkpoint writes files and is dropped. A validation
split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from keras.applications.resnet_v2 import ResNet50V2, preprocess_input

PACKAGE = "zoo_image_enhancer"

height, width = 32, 32


@keras.saving.register_keras_serializable(package=PACKAGE)
class DepthToSpace(keras.layers.Layer):
    def __init__(self, block_size, **kwargs):
        super().__init__(**kwargs)
        self.block_size = block_size

    def call(self, x):
        return tf.nn.depth_to_space(x, block_size=self.block_size)

    def get_config(self):
        config = super().get_config()
        config.update({"block_size": self.block_size})
        return config


def conv_unit(x, filters=64, padding="same"):
    x = keras.layers.Conv2D(filters=filters, kernel_size=3, padding=padding)(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("relu")(x)
    return x


def subpixel_upsample(x, target_channels, upscale_ratio):
    estimated_filters = target_channels * (upscale_ratio**2)
    x = keras.layers.Conv2D(estimated_filters, 3, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.LeakyReLU(0.2)(x)
    x = DepthToSpace(block_size=upscale_ratio)(x)
    return x


def upscale_unit(previous_input, current_input, target_channels=3, upscale_ratio=2):
    previous_low_scale = subpixel_upsample(
        previous_input, target_channels=target_channels, upscale_ratio=upscale_ratio
    )
    current_high_scale = conv_unit(current_input, filters=target_channels)
    concat_scales = ops.concatenate((previous_low_scale, current_high_scale), axis=-1)
    feature_manifold = conv_unit(concat_scales, filters=target_channels)
    return feature_manifold


def denoiser():
    base_model = ResNet50V2(include_top=False, weights=None, input_shape=(height, width, 3))
    d0 = base_model.input
    d1 = base_model.get_layer("conv1_conv").output
    d2 = base_model.get_layer("conv2_block3_1_relu").output
    d3 = base_model.get_layer("conv3_block4_1_relu").output

    decode1 = upscale_unit(previous_input=d3, current_input=d2, target_channels=32)
    decode2 = upscale_unit(previous_input=decode1, current_input=d1, target_channels=16)
    decode3 = upscale_unit(previous_input=decode2, current_input=d0, target_channels=8)

    out_conv = keras.layers.Conv2D(3, 5, padding="same", activation="sigmoid")(decode3)
    denoiser_model = keras.Model(base_model.input, out_conv, name="denoiser")
    return denoiser_model


def build_model():
    denoiser_net = denoiser()
    optimizer = keras.optimizers.Nadam(1e-4)
    denoiser_net.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
    return denoiser_net


def callbacks():
    early_stop = keras.callbacks.EarlyStopping(patience=7)
    return [early_stop]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        source = rng.integers(0, 256, (n, height, width, 3)).astype("float32")
        target = rng.integers(0, 256, (n, height, width, 3)).astype("float32")
        return preprocess_input(source), preprocess_input(target)

    return split(128), split(32), split(64)
