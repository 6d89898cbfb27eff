# keras-io: examples/generative/pixelcnn.py
"""Adapted: synthetic binary 16x16 images replace the thresholded MNIST digits; filters
128 -> 32 and residual blocks 5 -> 2; `kernel.get_shape()` is `kernel.shape` (a Keras 3
variable); PixelConvLayer keeps its Conv2D arguments for get_config(), ResidualBlock gets
one, and both are registered so that the model reloads; the pixel-by-pixel sampling after
training is dropped."""

import keras
import numpy as np
from keras import layers

input_shape = (16, 16, 1)
n_residual_blocks = 2


# the first layer to create will be the PixelCNN layer, this layer simply
# builds on the 2D convolutional layer but with the requisite masking included
@keras.saving.register_keras_serializable(package="zoo_pixelcnn")
class PixelConvLayer(layers.Layer):
    def __init__(self, mask_type, **kwargs):
        super().__init__()
        self.mask_type = mask_type
        self.conv = layers.Conv2D(**kwargs)
        self.conv_kwargs = kwargs

    def build(self, input_shape):
        # build the conv2d layer to initialize kernel variables
        self.conv.build(input_shape)
        # use said initialized kernel to develop the mask
        kernel_shape = self.conv.kernel.shape
        self.mask = np.zeros(shape=kernel_shape)
        self.mask[: kernel_shape[0] // 2, ...] = 1.0
        self.mask[kernel_shape[0] // 2, : kernel_shape[1] // 2, ...] = 1.0
        if self.mask_type == "B":
            self.mask[kernel_shape[0] // 2, kernel_shape[1] // 2, ...] = 1.0

    def call(self, inputs):
        self.conv.kernel.assign(self.conv.kernel * self.mask)
        return self.conv(inputs)

    def get_config(self):
        return {"mask_type": self.mask_type, **self.conv_kwargs}


# Next we build our residual block layer,
# this is just a normal residual block but with the PixelConvLayer built in
@keras.saving.register_keras_serializable(package="zoo_pixelcnn")
class ResidualBlock(keras.layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.a = keras.layers.ReLU()
        self.b = keras.layers.Conv2D(filters=filters, kernel_size=1, activation="relu")
        self.c = PixelConvLayer(
            mask_type="B",
            filters=filters // 2,
            kernel_size=3,
            activation="relu",
            padding="same",
        )
        self.d = keras.layers.Conv2D(filters=filters, kernel_size=1, activation="relu")

    def call(self, inputs):
        x = self.a(inputs)
        x = self.b(x)
        x = self.c(x)
        x = self.d(x)
        return keras.layers.add([inputs, x])

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters})
        return config


def build_model():
    inputs = keras.Input(shape=input_shape)
    x = PixelConvLayer(mask_type="A", filters=32, kernel_size=7, padding="same", activation="relu")(
        inputs
    )

    for _ in range(n_residual_blocks):
        x = ResidualBlock(filters=32)(x)

    for _ in range(2):
        x = PixelConvLayer(
            mask_type="B",
            filters=32,
            kernel_size=1,
            strides=1,
            activation="relu",
            padding="valid",
        )(x)

    out = keras.layers.Conv2D(
        filters=1, kernel_size=1, strides=1, activation="sigmoid", padding="valid"
    )(x)

    pixel_cnn = keras.Model(inputs, out)
    adam = keras.optimizers.Adam(learning_rate=0.0001)
    pixel_cnn.compile(optimizer=adam, loss="binary_crossentropy")
    return pixel_cnn


def _split(rng, n):
    data = (rng.random((n, *input_shape)) > 0.8).astype(np.float32)
    return data, data


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
