# keras-io: examples/vision/mixup.py
"""MixUp on FashionMNIST: synthetic 28x28x1 float images in [0, 1] with one-hot labels over
10 classes in place of the download; the training set is mixed up once, in load_data, by
the example's own tf.data pipeline (two shuffled copies zipped and mapped through
mix_up in batches of 64) and returned as NumPy arrays; the test set is not mixed; the
comparison run without mixup and the initial-weights file left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

BATCH_SIZE = 64


def sample_beta_distribution(size, concentration_0=0.2, concentration_1=0.2):
    gamma_1_sample = tf.random.gamma(shape=[size], alpha=concentration_1)
    gamma_2_sample = tf.random.gamma(shape=[size], alpha=concentration_0)
    return gamma_1_sample / (gamma_1_sample + gamma_2_sample)


def mix_up(ds_one, ds_two, alpha=0.2):
    # Unpack two datasets
    images_one, labels_one = ds_one
    images_two, labels_two = ds_two
    batch_size = tf.shape(images_one)[0]

    # Sample lambda and reshape it to do the mixup
    l = sample_beta_distribution(batch_size, alpha, alpha)  # noqa: E741
    x_l = tf.reshape(l, (batch_size, 1, 1, 1))
    y_l = tf.reshape(l, (batch_size, 1))

    # Perform mixup on both images and labels by combining a pair of images/labels
    # (one from each dataset) into one image/label
    images = images_one * x_l + images_two * (1 - x_l)
    labels = labels_one * y_l + labels_two * (1 - y_l)
    return (images, labels)


def get_training_model():
    model = keras.Sequential(
        [
            layers.Conv2D(16, (5, 5), activation="relu", input_shape=(28, 28, 1)),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(32, (5, 5), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Dropout(0.2),
            layers.GlobalAvgPool2D(),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )
    return model


def build_model():
    model = get_training_model()
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 28, 28, 1)).astype("float32") / 255.0
        y = tf.one_hot(rng.integers(0, 10, size=n), 10).numpy()
        return x, y

    (x_train, y_train), test = split(128), split(64)
    train_ds_one = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(BATCH_SIZE * 100, seed=1)
        .batch(BATCH_SIZE)
    )
    train_ds_two = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(BATCH_SIZE * 100, seed=2)
        .batch(BATCH_SIZE)
    )
    # Because we will be mixing up the images and their corresponding labels, we will be
    # combining two shuffled datasets from the same training data.
    train_ds = tf.data.Dataset.zip((train_ds_one, train_ds_two))
    train_ds_mu = train_ds.map(lambda ds_one, ds_two: mix_up(ds_one, ds_two, alpha=0.2))
    mixed = list(train_ds_mu.as_numpy_iterator())
    x_mixed = np.concatenate([images for images, _ in mixed])
    y_mixed = np.concatenate([labels for _, labels in mixed])
    return (x_mixed, y_mixed), test
