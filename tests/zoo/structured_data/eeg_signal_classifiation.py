# keras-io: examples/structured_data/EEG_Signal_Classifiation.py
"""EEG signal classification: synthetic eeg_power vectors (8 floats per sample) and
label-encoded targets over 68 classes, normalized by their mean and std as the example
does, in place of the Kaggle eeg-data.csv, given with shape (n, 1) so that the "mse" loss
broadcasts them against the 68 outputs as tf.keras 2 did (Keras 3 does not expand a rank-1
target); `keras.Input` in place of `input_shape=`."""

import keras
import numpy as np
from keras import regularizers
from keras.layers import Dense, Dropout
from keras.models import Sequential

num_features = 8
num_classes = 68

dropout_rate = 0.3
weight_decay = 1e-5


def build_model():
    model = Sequential(
        [
            keras.Input(shape=(num_features,)),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(128, kernel_regularizer=regularizers.l2(weight_decay), activation="relu"),
            Dropout(dropout_rate),
            Dense(num_classes),
        ]
    )
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    data = rng.lognormal(10.0, 1.5, size=(192, num_features))
    targets = rng.integers(0, num_classes, size=(192,))
    # Normalize the target data (labels):
    targets = (targets - targets.mean(axis=0)) / targets.std()
    targets = targets.reshape(-1, 1)
    return (data[:128], targets[:128]), (data[128:], targets[128:])
