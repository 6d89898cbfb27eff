"""A subclassed model whose call() takes no `training` argument, as keras.io's focal
modulation network writes it: Keras's fit then calls it without one, so a Dropout inside
never drops (Keras hands `training` on to the layers only where call() takes it)."""

import keras
import numpy as np
from keras import layers


@keras.saving.register_keras_serializable(package="call_without_training")
class NoTrainingArgument(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(8, activation="relu")
        self.drop = layers.Dropout(0.5)
        self.out = layers.Dense(3, activation="softmax")

    def call(self, x):
        return self.out(self.drop(self.hidden(x)))


def build_model():
    model = NoTrainingArgument()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 5))
    y = rng.integers(0, 3, size=192)
    return (x[:128], y[:128]), (x[128:], y[128:])
