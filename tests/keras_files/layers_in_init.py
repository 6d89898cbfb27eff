"""A subclassed model given its parts in `__init__`, as keras.io's patch_convnet builds
PatchConvNet(stem, trunk, ...): its get_config returns the layers themselves and its
from_config deserializes them, which works where Keras's save serializes the config first."""

import keras
import numpy as np
from keras import layers


@keras.saving.register_keras_serializable(package="layers_in_init")
class Parts(keras.Model):
    def __init__(self, body, head, **kwargs):
        super().__init__(**kwargs)
        self.body, self.head = body, head

    def call(self, x):
        return self.head(self.body(x))

    def get_config(self):
        return {**super().get_config(), "body": self.body, "head": self.head}

    @classmethod
    def from_config(cls, config):
        for key in ("body", "head"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def build_model():
    body = keras.Sequential([layers.Dense(8, activation="relu")], name="body")
    model = Parts(body, layers.Dense(3, activation="softmax"))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 5))
    y = rng.integers(0, 3, size=192)
    return (x[:128], y[:128]), (x[128:], y[128:])
