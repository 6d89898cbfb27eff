# keras-io: examples/vision/xray_classification_with_tpus.py
"""Pneumonia classification on chest X-rays: synthetic float32 32x32x3 images in [0, 1]
with bool labels (True for pneumonia, about 74 % of them, as the example's get_label
gives them) in place of the GCS download (180x180); Conv2D and conv_block widths 16, 32,
64, 128, 256 cut to 8, 8, 16, 16, 32 and dense_block widths 512, 128, 64 to 32, 16, 8;
the model built outside a TPU strategy scope; CLASS_WEIGHT computed as the example
computes class_weight, from the synthetic training labels; the EarlyStopping and
LearningRateScheduler callbacks of the example's second fit kept, its checkpoint callback
(it writes a file) and steps_per_epoch left out. A validation split of 32 examples, as the
example's fit takes validation data."""

import numpy as np
import tensorflow as tf

BATCH_SIZE = 16
IMAGE_SIZE = [32, 32]


def conv_block(filters):
    block = tf.keras.Sequential(
        [
            tf.keras.layers.SeparableConv2D(filters, 3, activation="relu", padding="same"),
            tf.keras.layers.SeparableConv2D(filters, 3, activation="relu", padding="same"),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.MaxPool2D(),
        ]
    )

    return block


def dense_block(units, dropout_rate):
    block = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(units, activation="relu"),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Dropout(dropout_rate),
        ]
    )

    return block


def build_model():
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(IMAGE_SIZE[0], IMAGE_SIZE[1], 3)),
            tf.keras.layers.Conv2D(8, 3, activation="relu", padding="same"),
            tf.keras.layers.Conv2D(8, 3, activation="relu", padding="same"),
            tf.keras.layers.MaxPool2D(),
            conv_block(8),
            conv_block(16),
            conv_block(16),
            tf.keras.layers.Dropout(0.2),
            conv_block(32),
            tf.keras.layers.Dropout(0.2),
            tf.keras.layers.Flatten(),
            dense_block(32, 0.7),
            dense_block(16, 0.5),
            dense_block(8, 0.3),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ]
    )

    METRICS = [  # noqa: N806 (as in the example)
        "accuracy",
        tf.keras.metrics.Precision(name="precision"),
        tf.keras.metrics.Recall(name="recall"),
    ]

    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=METRICS)
    return model


def exponential_decay(lr0, s):
    def exponential_decay_fn(epoch):
        return lr0 * 0.1 ** (epoch / s)

    return exponential_decay_fn


def callbacks():
    early_stopping_cb = tf.keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)
    exponential_decay_fn = exponential_decay(0.01, 20)
    lr_scheduler = tf.keras.callbacks.LearningRateScheduler(exponential_decay_fn)
    return [early_stopping_cb, lr_scheduler]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.random((n, IMAGE_SIZE[0], IMAGE_SIZE[1], 3), dtype="float32")
        labels = rng.random(n) < 0.74
        return images, labels

    return split(128), split(32), split(64)


def _class_weight():
    (_, train_labels), *_ = load_data()
    TRAIN_IMG_COUNT = len(train_labels)  # noqa: N806 (as in the example)
    COUNT_NORMAL = int(np.sum(~train_labels))  # noqa: N806 (as in the example)
    COUNT_PNEUMONIA = int(np.sum(train_labels))  # noqa: N806 (as in the example)
    weight_for_0 = (1 / COUNT_NORMAL) * (TRAIN_IMG_COUNT) / 2.0
    weight_for_1 = (1 / COUNT_PNEUMONIA) * (TRAIN_IMG_COUNT) / 2.0
    return {0: weight_for_0, 1: weight_for_1}


CLASS_WEIGHT = _class_weight()
