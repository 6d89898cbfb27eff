# keras-io: examples/timeseries/eeg_signal_classification.py
"""Conv1D EEG signal classifier: synthetic min-max scaled raw EEG windows of 64 samples
(cut from 512) with one-hot labels over 16 collated stimulus classes in place of the
Kaggle eeg-data.csv; the Conv1D filters cut from 32..1024 to 4..128 and the Dense widths
from 4096/2048/1024/128 to 64/32/16/16; `CLASS_WEIGHT` holds the example's naive
1 - count/total weights for the synthetic training labels; the ReduceLROnPlateau callback
is given by `callbacks()` (ModelCheckpoint, which writes files, is left out).
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

num_classes = 16
series_length = 64


def create_model():
    input_layer = keras.Input(shape=(series_length, 1))

    x = layers.Conv1D(filters=4, kernel_size=3, strides=2, activation="relu", padding="same")(
        input_layer
    )
    x = layers.BatchNormalization()(x)

    x = layers.Conv1D(filters=8, kernel_size=3, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv1D(filters=16, kernel_size=5, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv1D(filters=32, kernel_size=5, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv1D(filters=64, kernel_size=7, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)

    x = layers.Conv1D(filters=128, kernel_size=7, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)

    x = layers.Dropout(0.2)(x)

    x = layers.Flatten()(x)

    x = layers.Dense(64, activation="relu")(x)
    x = layers.Dropout(0.2)(x)

    x = layers.Dense(32, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    x = layers.Dropout(0.2)(x)

    x = layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    output_layer = layers.Dense(num_classes, activation="softmax")(x)

    return keras.Model(inputs=input_layer, outputs=output_layer)


def build_model():
    conv_model = create_model()
    optimizer = keras.optimizers.Adam(amsgrad=True, learning_rate=0.001)
    loss = keras.losses.CategoricalCrossentropy()
    conv_model.compile(
        optimizer=optimizer,
        loss=loss,
        metrics=[
            keras.metrics.TopKCategoricalAccuracy(k=3),
            keras.metrics.AUC(),
            keras.metrics.Precision(),
            keras.metrics.Recall(),
        ],
    )
    return conv_model


def callbacks():
    return [
        keras.callbacks.ReduceLROnPlateau(
            monitor="val_top_k_categorical_accuracy",
            factor=0.2,
            patience=2,
            min_lr=0.000001,
        ),
    ]


def _labels():
    rng = np.random.default_rng(0)
    return rng.integers(0, num_classes, size=(192,))


def _naive_class_weights():
    vals_dict = {}
    for i in _labels()[:128]:
        i = int(i)
        if i in vals_dict:
            vals_dict[i] += 1
        else:
            vals_dict[i] = 1
    total = sum(vals_dict.values())
    # weight = 1 - (no. of samples present / total no. of samples)
    return {k: (1 - (v / total)) for k, v in vals_dict.items()}


CLASS_WEIGHT = _naive_class_weights()


def load_data():
    rng = np.random.default_rng(1)
    labels = np.random.default_rng(0).integers(0, num_classes, size=(224,))
    raw = rng.normal(size=(224, series_length)).cumsum(axis=1)
    # Min-Max scaling of each series to [0, 1].
    low = raw.min(axis=1, keepdims=True)
    high = raw.max(axis=1, keepdims=True)
    x = ((raw - low) / (high - low)).astype(np.float32).reshape(-1, series_length, 1)
    y = keras.utils.to_categorical(labels.astype(np.float32).reshape(-1, 1), num_classes)
    return (x[:128], y[:128]), (x[192:], y[192:]), (x[128:192], y[128:192])
