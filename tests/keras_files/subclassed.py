"""A subclassed keras.Model whose get_config returns its __init__ arguments."""

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="keras_files")
class Classifier(keras.Model):
    def __init__(self, units=32, classes=3, **kwargs):
        super().__init__(**kwargs)
        self.units, self.classes = units, classes
        self.hidden = keras.layers.Dense(units, activation="relu")
        self.head = keras.layers.Dense(classes)

    def call(self, x):
        return self.head(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units, "classes": self.classes}


def build_model():
    model = Classifier()
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
