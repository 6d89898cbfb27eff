"""A small model whose Keras callback changes the weights on one worker only, at the end of
the last epoch: a user's bug that no all-reduce notices, for the workers' final comparison
of their weights to catch (with DIVERGE_ON_WORKER=<index>; without it, an ordinary run)."""

import json
import os

import keras
import numpy as np

EPOCHS = 1


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
    x = rng.normal(size=(1024 + 256, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])


class ShiftOneWorker(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        worker = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index")
        if epoch == EPOCHS - 1 and str(worker) == os.environ.get("DIVERGE_ON_WORKER"):
            first = self.model.weights[0]
            first.assign(first + 1.0)


def callbacks():
    return [ShiftOneWorker()]
