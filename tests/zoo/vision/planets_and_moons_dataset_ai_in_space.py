# keras-io: examples/vision/Planets_and_Moons_Dataset_AI_in_Space.py
"""The author's own model (emir_model) of this notebook export: synthetic standardized
float32 32x32x3 images with one-hot labels over 11 classes in place of the cloned dataset and
its ImageDataGenerator, activation "relu" in place of "ReLU" (which Keras 3 does not
recognize); the benchmark runs on frozen ImageNet applications are not kept."""

import numpy as np
from tensorflow.keras.layers import (
    BatchNormalization,
    Conv2D,
    Dense,
    Flatten,
    Input,
    MaxPooling2D,
    SpatialDropout2D,
)
from tensorflow.keras.models import Model


def emir_model():
    inp = Input(shape=(32, 32, 3))

    x = Conv2D(32, (2, 2), strides=(2, 2), padding="same", activation="relu", use_bias=True)(inp)
    x = BatchNormalization()(x)
    x = SpatialDropout2D(0.2)(x)
    x = MaxPooling2D(pool_size=(2, 2), strides=(2, 2), padding="same", data_format=None)(x)
    x = Conv2D(64, (2, 2), strides=(2, 2), padding="same", activation="relu", use_bias=True)(x)
    x = SpatialDropout2D(0.2)(x)
    x = Flatten()(x)
    x = Dense(32, activation="relu")(x)
    x = Dense(11, activation="softmax")(x)

    model = Model(inputs=inp, outputs=x)
    return model


def build_model():
    model = emir_model()
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.standard_normal((n, 32, 32, 3)).astype("float32")
        y = np.eye(11, dtype="float32")[rng.integers(0, 11, size=n)]
        return x, y

    return split(128), split(64)
