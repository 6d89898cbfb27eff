# keras-io: examples/vision/classification_to_detection.py
"""The classification model of this sliding-window example: synthetic float32 64x64x3 images
in [0, 255] with int32 labels 0-2 in place of the animal images directory (256x256), the
labels shaped (n, 1) rather than (n,) because Keras 3's sparse_categorical_crossentropy wants
the target one rank below the model's (n, 1, 3) output; MobileNetV2 with weights=None and
alpha=0.35 in place of ImageNet weights and alpha 1.0; the head Conv2D kernel cut from 8 to
2 to match the 2x2 feature map of a 64x64 image; metrics=["accuracy"] in place of
metrics="accuracy" (Keras 3 takes a list)."""

import numpy as np
import tensorflow as tf


def build_model():
    model = tf.keras.Sequential(
        [
            tf.keras.applications.MobileNetV2(
                input_shape=(64, 64, 3), include_top=False, weights=None, alpha=0.35
            ),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Conv2D(filters=3, kernel_size=2, activation="softmax"),
            tf.keras.layers.Reshape((1, 3)),
            tf.keras.layers.Activation("softmax"),
        ]
    )

    # decay learning rate

    initial_learning_rate = 0.001

    lr_schedule = tf.keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate, decay_steps=50, decay_rate=0.96, staircase=False
    )

    # compiling

    model.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=lr_schedule),
        loss=loss,
        metrics=["accuracy"],
    )
    return model


# loss function


def loss(labels, logits):
    return tf.keras.losses.sparse_categorical_crossentropy(labels, logits)


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.uniform(0, 255, size=(n, 64, 64, 3)).astype("float32")
        y = rng.integers(0, 3, size=(n, 1)).astype("int32")
        return x, y

    return split(128), split(64)
