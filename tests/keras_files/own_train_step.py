"""A subclassed model with its own train_step, as keras.io's "customizing fit" guide writes it:
an extra penalty on the weights, added in the step."""

import keras
import numpy as np
import tensorflow as tf

PENALTY = 1e-2


class Penalized(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.head = keras.layers.Dense(3)

    def call(self, x):
        return self.head(self.hidden(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            penalty = PENALTY * tf.add_n([tf.reduce_sum(w**2) for w in self.trainable_weights])
            loss = self.compute_loss(y=y, y_pred=y_pred)
            loss += tf.cast(penalty, loss.dtype)
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply(grads, self.trainable_weights)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def build_model():
    model = Penalized()
    model.compile(
        optimizer="sgd",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
