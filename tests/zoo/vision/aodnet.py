# keras-io: examples/vision/aodnet.py
"""AOD-Net dehazing: synthetic float32 (hazy, clean) image pairs in [0, 1] of 32x32x3 in
place of the NYU2 Dehaze download cropped to 256x256; built for (1, 32, 32, 3) instead of
(1, 256, 256, 3), without the OneDeviceStrategy("/gpu:0") scope (no GPU here), and given a
get_config for its constructor arguments."""

import keras
import numpy as np
import tensorflow as tf


@keras.saving.register_keras_serializable(package="zoo_aodnet")
class AODNet(tf.keras.Model):
    def __init__(self, name: str, stddev: float = 0.02, weight_decay: float = 1e-4):
        super().__init__(name=name)
        self.stddev = stddev
        self.weight_decay = weight_decay
        self.conv_layer_1 = tf.keras.layers.Conv2D(
            filters=3,
            kernel_size=1,
            strides=1,
            padding="same",
            activation=tf.nn.relu,
            use_bias=True,
            kernel_initializer=tf.initializers.random_normal(stddev=stddev),
            kernel_regularizer=tf.keras.regularizers.L2(weight_decay),
        )
        self.conv_layer_2 = tf.keras.layers.Conv2D(
            filters=3,
            kernel_size=1,
            strides=1,
            padding="same",
            activation=tf.nn.relu,
            use_bias=True,
            kernel_initializer=tf.initializers.random_normal(stddev=stddev),
            kernel_regularizer=tf.keras.regularizers.L2(weight_decay),
        )
        self.conv_layer_3 = tf.keras.layers.Conv2D(
            filters=3,
            kernel_size=5,
            strides=1,
            padding="same",
            activation=tf.nn.relu,
            use_bias=True,
            kernel_initializer=tf.initializers.random_normal(stddev=stddev),
            kernel_regularizer=tf.keras.regularizers.L2(weight_decay),
        )
        self.conv_layer_4 = tf.keras.layers.Conv2D(
            filters=3,
            kernel_size=7,
            strides=1,
            padding="same",
            activation=tf.nn.relu,
            use_bias=True,
            kernel_initializer=tf.initializers.random_normal(stddev=stddev),
            kernel_regularizer=tf.keras.regularizers.L2(weight_decay),
        )
        self.conv_layer_5 = tf.keras.layers.Conv2D(
            filters=3,
            kernel_size=3,
            strides=1,
            padding="same",
            activation=tf.nn.relu,
            use_bias=True,
            kernel_initializer=tf.initializers.random_normal(stddev=stddev),
            kernel_regularizer=tf.keras.regularizers.L2(weight_decay),
        )
        self.relu = tf.keras.layers.ReLU(max_value=1.0)

    def call(self, inputs, *args, **kwargs):
        conv_1 = self.conv_layer_1(inputs)
        conv_2 = self.conv_layer_2(conv_1)
        concat_1 = tf.concat([conv_1, conv_2], axis=-1)
        conv_3 = self.conv_layer_3(concat_1)
        concat_2 = tf.concat([conv_2, conv_3], axis=-1)
        conv_4 = self.conv_layer_4(concat_2)
        concat_3 = tf.concat([conv_1, conv_2, conv_3, conv_4], axis=-1)
        k = self.conv_layer_5(concat_3)
        j = tf.math.multiply(k, inputs) - k + 1.0
        output = self.relu(j)
        return output

    def get_config(self):
        return {"name": self.name, "stddev": self.stddev, "weight_decay": self.weight_decay}


def peak_signal_noise_ratio(y_true, y_pred):
    return tf.image.psnr(y_pred, y_true, max_val=255.0)


def build_model():
    model = AODNet(name="AODNet", stddev=0.02, weight_decay=1e-4)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=1e-4),
        loss=tf.keras.losses.MeanSquaredError(),
        metrics=[peak_signal_noise_ratio],
    )
    model.build((1, 32, 32, 3))
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        hazy = rng.random((n, 32, 32, 3), dtype=np.float32)
        original = rng.random((n, 32, 32, 3), dtype=np.float32)
        return hazy, original

    return split(128), split(64)
