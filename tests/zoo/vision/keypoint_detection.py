# keras-io: examples/vision/keypoint_detection.py
"""Keypoint detection with a frozen MobileNetV2 backbone: synthetic int 224x224x3 images in
[0, 255] with keypoint targets of shape (1, 1, 48) in [0, 1] in place of the StanfordExtra
download and its imgaug augmentation; MobileNetV2 with weights=None in place of the
ImageNet weights and alpha 0.35 in place of 1.0 (the image side stays 224 so that the
backbone's 7x7 output leaves the 1x1 output the two valid SeparableConv2D layers expect)."""

import keras
import numpy as np
from keras import layers

IMG_SIZE = 224
NUM_KEYPOINTS = 24 * 2  # 24 pairs each having x and y coordinates


def get_model():
    # Load the pre-trained weights of MobileNetV2 and freeze the weights
    backbone = keras.applications.MobileNetV2(
        weights=None,
        alpha=0.35,
        include_top=False,
        input_shape=(IMG_SIZE, IMG_SIZE, 3),
    )
    backbone.trainable = False

    inputs = layers.Input((IMG_SIZE, IMG_SIZE, 3))
    x = keras.applications.mobilenet_v2.preprocess_input(inputs)
    x = backbone(x)
    x = layers.Dropout(0.3)(x)
    x = layers.SeparableConv2D(NUM_KEYPOINTS, kernel_size=5, strides=1, activation="relu")(x)
    outputs = layers.SeparableConv2D(NUM_KEYPOINTS, kernel_size=3, strides=1, activation="sigmoid")(
        x
    )

    return keras.Model(inputs, outputs, name="keypoint_detector")


def build_model():
    model = get_model()
    model.compile(loss="mse", optimizer=keras.optimizers.Adam(1e-4))
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, size=(n, IMG_SIZE, IMG_SIZE, 3)).astype("int")
        keypoints = rng.uniform(0, 1, size=(n, 1, 1, NUM_KEYPOINTS)).astype("float32")
        return images, keypoints

    return split(128), split(64)
