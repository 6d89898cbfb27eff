"""A small two-input classifier on synthetic data, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/two_inputs_task.py --strategy=mirrored \
      --num_cpu_devices=2 --epochs=3 --model_dir=/tmp/two_inputs

It shows what a model beyond the MNIST MLP brings to data-parallel training:
inputs as a dict keyed by the model's input names, an L2 regularizer (its loss
counts once per step, not once per replica), batch statistics
(`BatchNormalization(synchronized=True)` averages them over every replica, so
N replicas train like one device) and dropout (each replica draws its own
masks). The data comes from a fixed random teacher, so it needs no download.
"""

import keras
import numpy as np

CLASSES = 3
FEATURES = 16
EXTRA = 4
DROPOUT = 0.2
TRAIN_EXAMPLES = 2048
TEST_EXAMPLES = 1000


def build_model():
    features = keras.Input(shape=(FEATURES,), name="features")
    extra = keras.Input(shape=(EXTRA,), name="extra")
    hidden = keras.layers.Dense(32, kernel_regularizer=keras.regularizers.L2(1e-3))(features)
    hidden = keras.layers.BatchNormalization(synchronized=True, name="batch_norm")(hidden)
    hidden = keras.layers.Activation("relu")(hidden)
    hidden = keras.layers.Dropout(DROPOUT)(hidden)
    joined = keras.layers.Concatenate()([hidden, extra])
    output = keras.layers.Dense(CLASSES, activation="softmax")(joined)
    model = keras.Model({"features": features, "extra": extra}, output, name="two_inputs")
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(20261123)
    teacher = rng.normal(size=(FEATURES + EXTRA, CLASSES))

    def split(n):
        x = {
            "features": rng.normal(size=(n, FEATURES)).astype("float32"),
            "extra": rng.normal(size=(n, EXTRA)).astype("float32"),
        }
        logits = np.concatenate([np.tanh(x["features"]), x["extra"]], axis=1) @ teacher
        return x, logits.argmax(axis=1)

    return split(TRAIN_EXAMPLES), split(TEST_EXAMPLES)
