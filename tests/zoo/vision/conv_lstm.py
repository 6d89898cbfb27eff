# keras-io: examples/vision/conv_lstm.py
"""Next-frame prediction with ConvLSTM2D: synthetic float64 clips in [0, 1] (as the example's
uint8 / 255 gives them) of 5 frames of 16x16x1, shifted by one frame into x and y by the
example's create_shifted_frames, in place of Moving MNIST (20 frames of 64x64); filters cut
from 64 to 4; its EarlyStopping and ReduceLROnPlateau kept in callbacks().
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers


def create_shifted_frames(data):
    x = data[:, 0 : data.shape[1] - 1, :, :]
    y = data[:, 1 : data.shape[1], :, :]
    return x, y


def build_model():
    # Construct the input layer with no definite frame size.
    inp = layers.Input(shape=(None, 16, 16, 1))

    # We will construct 3 `ConvLSTM2D` layers with batch normalization,
    # followed by a `Conv3D` layer for the spatiotemporal outputs.
    x = layers.ConvLSTM2D(
        filters=4,
        kernel_size=(5, 5),
        padding="same",
        return_sequences=True,
        activation="relu",
    )(inp)
    x = layers.BatchNormalization()(x)
    x = layers.ConvLSTM2D(
        filters=4,
        kernel_size=(3, 3),
        padding="same",
        return_sequences=True,
        activation="relu",
    )(x)
    x = layers.BatchNormalization()(x)
    x = layers.ConvLSTM2D(
        filters=4,
        kernel_size=(1, 1),
        padding="same",
        return_sequences=True,
        activation="relu",
    )(x)
    x = layers.Conv3D(filters=1, kernel_size=(3, 3, 3), activation="sigmoid", padding="same")(x)

    # Next, we will build the complete model and compile it.
    model = keras.models.Model(inp, x)
    model.compile(
        loss=keras.losses.binary_crossentropy,
        optimizer=keras.optimizers.Adam(),
    )
    return model


def callbacks():
    # Define some callbacks to improve training.
    early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10)
    reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=5)
    return [early_stopping, reduce_lr]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        clips = rng.integers(0, 256, size=(n, 5, 16, 16, 1)).astype("uint8") / 255
        return create_shifted_frames(clips)

    train, test = split(128), split(64)
    return train, split(32), test
