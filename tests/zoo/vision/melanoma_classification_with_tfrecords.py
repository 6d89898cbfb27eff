# keras-io: examples/vision/melanoma_classification_with_tfrecords.py
"""Melanoma classification with a frozen Xception: synthetic 71x71x3 float images in [0, 1]
(Xception's smallest input) with int32 labels, 2 of 128 training and 1 of 64 test labels
malignant (about the 1.76% of the real data), in place of the TFRecords on GCS (1024x1024
resized to 256x256) and their random flip; Xception with weights=None in place of the
ImageNet weights; the output bias and the class weights computed from the synthetic
labels as the example computes them from train.csv; the AUC metric passed in a list
(Keras 3 takes metrics only as a list or dict); the ModelCheckpoint callback (it only
writes a file) left out and no TPU strategy scope. A validation split of 32 examples, as
the example's fit takes validation data."""

import numpy as np
import tensorflow as tf

IMAGE_RESIZE = [71, 71]


def _labels(n, positives, seed):
    labels = np.zeros(n, dtype="int32")
    labels[np.random.default_rng(seed).choice(n, positives, replace=False)] = 1
    return labels


TRAIN_LABELS = _labels(128, 2, seed=1)
TEST_LABELS = _labels(64, 1, seed=2)
VALIDATION_LABELS = _labels(32, 1, seed=3)

total_img = TRAIN_LABELS.size
malignant = np.count_nonzero(TRAIN_LABELS)
benign = total_img - malignant

initial_bias = np.log([malignant / benign])

weight_for_0 = (1 / benign) * (total_img) / 2.0
weight_for_1 = (1 / malignant) * (total_img) / 2.0

CLASS_WEIGHT = {0: weight_for_0, 1: weight_for_1}


def exponential_decay(lr0, s):
    def exponential_decay_fn(epoch):
        return lr0 * 0.1 ** (epoch / s)

    return exponential_decay_fn


def make_model(output_bias=None, metrics=None):
    if output_bias is not None:
        output_bias = tf.keras.initializers.Constant(output_bias)

    base_model = tf.keras.applications.Xception(
        input_shape=(*IMAGE_RESIZE, 3), include_top=False, weights=None
    )

    base_model.trainable = False

    model = tf.keras.Sequential(
        [
            base_model,
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(
                8, activation="relu", kernel_regularizer=tf.keras.regularizers.l2(0.001)
            ),
            tf.keras.layers.Dropout(0.7),
            tf.keras.layers.Dense(1, activation="sigmoid", bias_initializer=output_bias),
        ]
    )

    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=metrics)

    return model


def build_model():
    return make_model(output_bias=initial_bias, metrics=[tf.keras.metrics.AUC(name="auc")])


def callbacks():
    exponential_decay_fn = exponential_decay(0.01, 20)
    lr_scheduler = tf.keras.callbacks.LearningRateScheduler(exponential_decay_fn)
    early_stopping_cb = tf.keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)
    return [early_stopping_cb, lr_scheduler]


def load_data():
    rng = np.random.default_rng(0)

    def images(n):
        return rng.uniform(0, 1, size=(n, *IMAGE_RESIZE, 3)).astype("float32")

    return (images(128), TRAIN_LABELS), (images(32), VALIDATION_LABELS), (images(64), TEST_LABELS)
