# keras-io: examples/vision/3D_image_classification.py
"""3D CNN on CT scans: synthetic 46x46x46 volumes in [0, 1] with binary labels in place of
the NSCLC download (128x128x128), filters cut from 16/32/64/128 to 4/8/8/16 and the Dense
width from 256 to 32; its EarlyStopping kept in callbacks(), not its ModelCheckpoint.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers


def get_model(img_size, num_classes):
    # build a 3D convolutional neural network model

    inputs = keras.Input(img_size)

    x = layers.Conv3D(filters=4, kernel_size=3, activation="relu")(inputs)
    x = layers.MaxPool3D(pool_size=2)(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv3D(filters=8, kernel_size=3, activation="relu")(x)
    x = layers.MaxPool3D(pool_size=2)(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv3D(filters=8, kernel_size=3, activation="relu")(x)
    x = layers.MaxPool3D(pool_size=2)(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv3D(filters=16, kernel_size=3, activation="relu")(x)
    x = layers.MaxPool3D(pool_size=2)(x)
    x = layers.BatchNormalization()(x)

    x = layers.Flatten()(x)
    x = layers.Dense(units=32, activation="relu")(x)
    x = layers.Dropout(0.3)(x)

    outputs = layers.Dense(units=1, activation="sigmoid")(x)

    # define the model
    model = keras.Model(inputs, outputs, name="3dcnn")
    return model


def build_model():
    model = get_model((46, 46, 46, 1), 2)
    initial_learning_rate = 0.0001
    lr_schedule = tf.keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate, decay_steps=100000, decay_rate=0.96, staircase=True
    )
    model.compile(
        loss="binary_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=lr_schedule),
        metrics=["acc"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.random((n, 46, 46, 46, 1)).astype("float32")
        y = rng.integers(0, 2, size=(n,))
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test


def callbacks():
    early_stopping_cb = tf.keras.callbacks.EarlyStopping(monitor="val_acc", patience=10)
    return [early_stopping_cb]
