"""A small convnet on synthetic images streamed from TFRecord shards with tf.data.

  python -m tf_mgpu.tools.synthetic --out=/tmp/synth --gigabytes=5
  SYNTHETIC_DIR=/tmp/synth/full python -m tf_mgpu.main \
      --task=examples/synthetic_tfrecord_task.py --epochs=1 --model_dir=/tmp/synth_tfrecord

An ordinary Keras file: build_model() returns a compiled model, and load_data()
returns a tf.data dataset of (image, label) per split, read from the shard files
as tf.data's file-based sharding expects: the sorted list of files
(`Dataset.list_files(..., shuffle=False)`), each read by a TFRecordDataset,
interleaved, its length declared from meta.json. SYNTHETIC_DIR names a
folder written by `tf_mgpu.tools.synthetic` (train-*.tfrecord, test-*.tfrecord,
meta.json).
"""

import json
import os

import keras
import tensorflow as tf

DIR = os.environ.get("SYNTHETIC_DIR", "/tmp/synth/full")


def _meta() -> dict:
    path = os.path.join(DIR, "meta.json")
    if not os.path.exists(path):
        raise SystemExit(
            f"{os.path.basename(__file__)}: no {path}; write the data first with "
            f"`python -m tf_mgpu.tools.synthetic --out=/tmp/synth --gigabytes=1` and set "
            f"SYNTHETIC_DIR=/tmp/synth/full"
        )
    with open(path) as f:
        return json.load(f)


def _examples(split: str, shape, count: int) -> tf.data.Dataset:
    files = tf.data.Dataset.list_files(os.path.join(DIR, f"{split}-*.tfrecord"), shuffle=False)
    records = files.interleave(
        tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE
    )
    features = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record):
        example = tf.io.parse_single_example(record, features)
        image = tf.reshape(tf.io.decode_raw(example["image"], tf.uint8), shape)
        return image, example["label"]

    examples = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    # The count the writer recorded: tf_mgpu then reads nothing before training.
    return examples.apply(tf.data.experimental.assert_cardinality(count))


def build_model():
    meta = _meta()
    model = keras.Sequential(
        [
            keras.Input(shape=tuple(meta["shape"]), dtype="uint8"),
            keras.layers.Rescaling(1 / 255),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(meta["classes"]),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    meta = _meta()
    shape = meta["shape"]
    return _examples("train", shape, meta["train"]), _examples("test", shape, meta["test"])
