"""A task whose splits are TFRecord files, read as tf.data datasets of files: the layout
people shard big data into. The files are in $TFRECORD_DIR (train-*.tfrecord,
test-*.tfrecord), written by the test that trains this file."""

import os

import keras
import tensorflow as tf

FEATURES = 8
CLASSES = 4


def build_model():
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def _parse(record):
    example = tf.io.parse_single_example(
        record,
        {
            "x": tf.io.FixedLenFeature([FEATURES], tf.float32),
            "y": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    return example["x"], example["y"]


def _files(pattern: str) -> tf.data.Dataset:
    names = tf.data.Dataset.list_files(
        os.path.join(os.environ["TFRECORD_DIR"], pattern), shuffle=False
    )
    return names.interleave(tf.data.TFRecordDataset, cycle_length=2).map(_parse)


def load_data():
    return _files("train-*.tfrecord"), _files("test-*.tfrecord")
