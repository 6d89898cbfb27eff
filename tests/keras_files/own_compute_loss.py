"""A model overriding compute_loss, as keras.io's "customizing fit" guide does: the compiled
loss plus a penalty on the size of the logits, computed with a Keras loss (so it is reduced
over replicas as the compiled loss is). Keras's own train_step and test_step call it."""

import keras
import numpy as np

PENALTY = 0.05


class SmallLogits(keras.Model):
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = super().compute_loss(x, y, y_pred, sample_weight, training=training)
        size = keras.losses.MeanSquaredError()(keras.ops.zeros_like(y_pred), y_pred)
        return loss + PENALTY * size


def build_model():
    x = keras.Input((16,))
    hidden = keras.layers.Dense(32, activation="relu")(x)
    model = SmallLogits(x, keras.layers.Dense(3)(hidden))
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
