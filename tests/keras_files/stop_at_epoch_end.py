"""A small model whose Keras callback sends its own process SIGTERM at the end of the first
epoch's last batch, when STOP_AT_EPOCH_END is set: the signal lands as evaluation begins,
as an orchestrator's may."""

import os
import signal

import keras
import numpy as np

STEPS = 16  # 1,024 examples at a global batch of 64


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024 + 4096, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])


def _stop(batch, logs):
    if os.environ.get("STOP_AT_EPOCH_END") and batch == STEPS - 1:
        os.environ.pop("STOP_AT_EPOCH_END")  # once
        os.kill(os.getpid(), signal.SIGTERM)


def callbacks():
    return [keras.callbacks.LambdaCallback(on_train_batch_end=_stop)]
