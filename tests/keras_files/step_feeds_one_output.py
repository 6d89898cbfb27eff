"""A model whose call() returns two outputs (logits and attention maps, as keras.io's
patch_convnet) while its own train_step and test_step hand the compiled loss and metrics the
logits alone."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers


@keras.saving.register_keras_serializable(package="step_feeds_one_output")
class WithMaps(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(8, activation="relu")
        self.logits = layers.Dense(3)

    def call(self, x, training=None):
        h = self.hidden(x)
        return self.logits(h), h

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits, _ = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=logits)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, logits)
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y = data
        logits, _ = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=logits)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, logits)
        return {m.name: m.result() for m in self.metrics}


def build_model():
    model = WithMaps()
    model.compile(
        optimizer="sgd",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 5))
    y = rng.integers(0, 3, size=192)
    return (x[:128], y[:128]), (x[128:], y[128:])
