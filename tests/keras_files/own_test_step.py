"""A model with its own test_step, as keras.io's "customizing fit" guide writes one: here it
evaluates on inputs clipped to [-1, 1], a robustness check the default step would not run."""

import keras
import numpy as np


class ClippedEval(keras.Model):
    def test_step(self, data):
        x, y = data
        y_pred = self(keras.ops.clip(x, -1.0, 1.0), training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def build_model():
    x = keras.Input((16,))
    hidden = keras.layers.Dense(32, activation="relu")(x)
    model = ClippedEval(x, keras.layers.Dense(3)(hidden))
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
