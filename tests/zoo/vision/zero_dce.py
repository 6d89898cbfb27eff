# keras-io: examples/vision/zero_dce.py
"""Zero-DCE low-light enhancement, its own train_step and test_step, fit on images alone (no
labels) as the example does: synthetic float32 32x32x3 images in [0, 1] in place of the LoL
dataset (512x512); ZeroDCE registered, marked built in __init__ (its train_step calls only
its DCE-Net, so Keras never builds it) and given a get_compile_config / compile_from_config
for its compile(learning_rate) (building the optimizer, as Keras's own compile_from_config
does), so that the saved model reloads compiled; the example's save_weights/load_weights
overrides kept as written; the validation data, plots and inference left out."""

import keras
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

IMAGE_SIZE = 32
BATCH_SIZE = 8


def build_dce_net():
    input_img = keras.Input(shape=[None, None, 3])
    conv1 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(input_img)
    conv2 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(conv1)
    conv3 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(conv2)
    conv4 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(conv3)
    int_con1 = layers.Concatenate(axis=-1)([conv4, conv3])
    conv5 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(int_con1)
    int_con2 = layers.Concatenate(axis=-1)([conv5, conv2])
    conv6 = layers.Conv2D(32, (3, 3), strides=(1, 1), activation="relu", padding="same")(int_con2)
    int_con3 = layers.Concatenate(axis=-1)([conv6, conv1])
    x_r = layers.Conv2D(24, (3, 3), strides=(1, 1), activation="tanh", padding="same")(int_con3)
    return keras.Model(inputs=input_img, outputs=x_r)


def color_constancy_loss(x):
    mean_rgb = tf.reduce_mean(x, [1, 2], keepdims=True)
    mr, mg, mb = mean_rgb[:, :, :, 0], mean_rgb[:, :, :, 1], mean_rgb[:, :, :, 2]
    d_rg = tf.pow(mr - mg, 2)
    d_rb = tf.pow(mr - mb, 2)
    d_gb = tf.pow(mb - mg, 2)
    return tf.pow(tf.pow(d_rg, 2) + tf.pow(d_rb, 2) + tf.pow(d_gb, 2), 0.5)


def exposure_loss(x, mean_val=0.6):
    x = tf.reduce_mean(x, 3, keepdims=True)
    mean = tf.keras.layers.AveragePooling2D(pool_size=16, strides=16)(x)
    return tf.reduce_mean(tf.pow(mean - mean_val, 2))


def illumination_smoothness_loss(x):
    batch_size = tf.shape(x)[0]
    h_x = tf.shape(x)[1]
    w_x = tf.shape(x)[2]
    count_h = (tf.shape(x)[2] - 1) * tf.shape(x)[3]
    count_w = tf.shape(x)[2] * (tf.shape(x)[3] - 1)
    h_tv = tf.reduce_sum(tf.pow((x[:, 1:, :, :] - x[:, : h_x - 1, :, :]), 2))
    w_tv = tf.reduce_sum(tf.pow((x[:, :, 1:, :] - x[:, :, : w_x - 1, :]), 2))
    batch_size = tf.cast(batch_size, dtype=tf.float32)
    count_h = tf.cast(count_h, dtype=tf.float32)
    count_w = tf.cast(count_w, dtype=tf.float32)
    return 2 * (h_tv / count_h + w_tv / count_w) / batch_size


class SpatialConsistancyLoss:
    def __init__(self):
        self.left_kernel = tf.constant([[[[0, 0, 0]], [[-1, 1, 0]], [[0, 0, 0]]]], dtype=tf.float32)
        self.right_kernel = tf.constant(
            [[[[0, 0, 0]], [[0, 1, -1]], [[0, 0, 0]]]], dtype=tf.float32
        )
        self.up_kernel = tf.constant([[[[0, -1, 0]], [[0, 1, 0]], [[0, 0, 0]]]], dtype=tf.float32)
        self.down_kernel = tf.constant([[[[0, 0, 0]], [[0, 1, 0]], [[0, -1, 0]]]], dtype=tf.float32)

        self.pool = tf.keras.layers.AveragePooling2D(pool_size=4)

    def __call__(self, original, enhanced):
        original_mean = tf.reduce_mean(original, 3, keepdims=True)
        enhanced_mean = tf.reduce_mean(enhanced, 3, keepdims=True)
        original_pool = self.pool(original_mean)
        enhanced_pool = self.pool(enhanced_mean)

        d_original_left = tf.nn.conv2d(
            original_pool, self.left_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_original_right = tf.nn.conv2d(
            original_pool, self.right_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_original_up = tf.nn.conv2d(
            original_pool, self.up_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_original_down = tf.nn.conv2d(
            original_pool, self.down_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )

        d_enhanced_left = tf.nn.conv2d(
            enhanced_pool, self.left_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_enhanced_right = tf.nn.conv2d(
            enhanced_pool, self.right_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_enhanced_up = tf.nn.conv2d(
            enhanced_pool, self.up_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )
        d_enhanced_down = tf.nn.conv2d(
            enhanced_pool, self.down_kernel, strides=[1, 1, 1, 1], padding="SAME"
        )

        d_left = tf.pow(d_original_left - d_enhanced_left, 2)
        d_right = tf.pow(d_original_right - d_enhanced_right, 2)
        d_up = tf.pow(d_original_up - d_enhanced_up, 2)
        d_down = tf.pow(d_original_down - d_enhanced_down, 2)
        return d_left + d_right + d_up + d_down


@keras.saving.register_keras_serializable(package="zoo_zero_dce")
class ZeroDCE(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dce_model = build_dce_net()
        self.built = True

    def compile(self, learning_rate, **kwargs):
        super().compile(**kwargs)
        self.optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
        self.spatial_constancy_loss = SpatialConsistancyLoss()

    def get_compile_config(self):
        return {"learning_rate": float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))}

    def compile_from_config(self, config):
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_enhanced_image(self, data, output):
        r1 = output[:, :, :, :3]
        r2 = output[:, :, :, 3:6]
        r3 = output[:, :, :, 6:9]
        r4 = output[:, :, :, 9:12]
        r5 = output[:, :, :, 12:15]
        r6 = output[:, :, :, 15:18]
        r7 = output[:, :, :, 18:21]
        r8 = output[:, :, :, 21:24]
        x = data + r1 * (tf.pow(data, 2) - data)
        x = x + r2 * (tf.pow(x, 2) - x)
        x = x + r3 * (tf.pow(x, 2) - x)
        enhanced_image = x + r4 * (tf.pow(x, 2) - x)
        x = enhanced_image + r5 * (tf.pow(enhanced_image, 2) - enhanced_image)
        x = x + r6 * (tf.pow(x, 2) - x)
        x = x + r7 * (tf.pow(x, 2) - x)
        enhanced_image = x + r8 * (tf.pow(x, 2) - x)
        return enhanced_image

    def call(self, data):
        dce_net_output = self.dce_model(data)
        return self.get_enhanced_image(data, dce_net_output)

    def _calculate_losses(self, data, output):
        output = self.dce_model(data)
        enhanced_image = self.get_enhanced_image(data, output)
        loss_illumination = 200 * illumination_smoothness_loss(output)
        loss_spatial_constancy = tf.reduce_mean(self.spatial_constancy_loss(enhanced_image, data))
        loss_color_constancy = 5 * tf.reduce_mean(color_constancy_loss(enhanced_image))
        loss_exposure = 10 * tf.reduce_mean(exposure_loss(enhanced_image))
        total_loss = (
            loss_illumination + loss_spatial_constancy + loss_color_constancy + loss_exposure
        )
        return {
            "total_loss": total_loss,
            "illumination_smoothness_loss": loss_illumination,
            "spatial_constancy_loss": loss_spatial_constancy,
            "color_constancy_loss": loss_color_constancy,
            "exposure_loss": loss_exposure,
        }

    def train_step(self, data):
        with tf.GradientTape() as tape:
            output = self.dce_model(data)
            losses = self._calculate_losses(data, output)
        gradients = tape.gradient(losses["total_loss"], self.dce_model.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.dce_model.trainable_weights))  # noqa: B905 (as in the example)

        return losses

    def test_step(self, data):
        output = self.dce_model(data)
        return self._calculate_losses(data, output)

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        self.dce_model.save_weights(
            filepath, overwrite=overwrite, save_format=save_format, options=options
        )

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        self.dce_model.load_weights(
            filepath=filepath,
            by_name=by_name,
            skip_mismatch=skip_mismatch,
            options=options,
        )


def build_model():
    zero_dce_model = ZeroDCE()
    zero_dce_model.compile(learning_rate=1e-4)
    return zero_dce_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, size=(n, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32") / 255.0
        return images, None

    return split(128), split(64)
