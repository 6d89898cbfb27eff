"""A convolutional denoising autoencoder as keras.io writes it ("Convolutional autoencoder for
image denoising"): 28x28 images in, 28x28 images out, a binary cross-entropy per pixel."""

import keras
import numpy as np
from keras import layers


def build_model():
    inputs = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(8, (3, 3), activation="relu", padding="same")(inputs)
    x = layers.MaxPooling2D((2, 2), padding="same")(x)
    x = layers.Conv2DTranspose(8, (3, 3), strides=2, activation="relu", padding="same")(x)
    x = layers.Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)
    autoencoder = keras.Model(inputs, x)
    autoencoder.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy")
    return autoencoder


def load_data():
    rng = np.random.default_rng(0)
    clean = (rng.random((200, 28, 28, 1)) > 0.7).astype("float32")
    noisy = np.clip(clean + 0.4 * rng.normal(size=clean.shape), 0, 1).astype("float32")
    # 100 test images: a last batch of 4 at a global batch of 32.
    return (noisy[:96], clean[:96]), (noisy[96:196], clean[96:196])
