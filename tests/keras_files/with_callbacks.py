"""Keras callbacks as a user hands them to fit: a per-epoch rate schedule, a plateau
schedule, early stopping that restores the best weights, and a callback of the user's own."""

import keras
import numpy as np

PATIENCE = 2  # EarlyStopping's
MIN_DELTA = 0.01  # EarlyStopping's: 10 stops at the third epoch


class RateLog(keras.callbacks.Callback):
    """The user's own: counts batch ends and records the rate at each epoch's end."""

    def on_train_begin(self, logs=None):
        self.batch_ends = 0
        self.rates = []

    def on_train_batch_end(self, batch, logs=None):
        self.batch_ends += 1

    def on_epoch_end(self, epoch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))


def callbacks():
    return [
        keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate * 0.8 if epoch else rate),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=0),
        keras.callbacks.EarlyStopping(
            monitor="val_loss", patience=PATIENCE, min_delta=MIN_DELTA, restore_best_weights=True
        ),
        RateLog(),
    ]


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1536, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3)) + rng.normal(size=(1536, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:1280], y[1024:1280]), (x[1280:], y[1280:])
