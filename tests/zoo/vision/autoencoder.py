# keras-io: examples/vision/autoencoder.py
"""Convolutional denoising autoencoder: synthetic 28x28x1 images in [0, 1] (float32) in place
of MNIST, with noisy copies made by the example's noise() (float64, as it gives them; drawn
from the seeded generator in place of np.random), trained noisy -> clean as in its second
fit; filters cut from 32 to 8."""

import numpy as np
from tensorflow.keras.layers import Conv2D, Input, MaxPooling2D, UpSampling2D
from tensorflow.keras.models import Model


def noise(dataset, rng):
    """
    Adds random noise to each image in the supplied dataset.
    """

    noise_factor = 0.4
    noisy_dataset = dataset + noise_factor * rng.normal(loc=0.0, scale=1.0, size=dataset.shape)

    return np.clip(noisy_dataset, 0.0, 1.0)


def build_model():
    input = Input(shape=(28, 28, 1))

    # Encoder
    x = Conv2D(8, (3, 3), activation="relu", padding="same")(input)
    x = MaxPooling2D((2, 2), padding="same")(x)
    x = Conv2D(8, (3, 3), activation="relu", padding="same")(x)
    x = MaxPooling2D((2, 2), padding="same")(x)

    # Decoder
    x = Conv2D(8, (3, 3), activation="relu", padding="same")(x)
    x = UpSampling2D((2, 2))(x)
    x = Conv2D(8, (3, 3), activation="relu", padding="same")(x)
    x = UpSampling2D((2, 2))(x)
    x = Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)

    # Autoencoder
    autoencoder = Model(input, x)
    autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
    return autoencoder


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        clean = rng.random((n, 28, 28, 1), dtype=np.float32)
        return noise(clean, rng), clean

    return split(128), split(64)
