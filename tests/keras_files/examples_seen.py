"""A layer that updates a variable of its own in `call`, as Keras users write running state:
it counts the examples it has trained on and fades its input in over the first 256 (a warmup
by examples). Keras creates the count with aggregation "none", so under a distribution
strategy each replica counts its own share."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="examples_seen")
class FadeIn(keras.layers.Layer):
    def build(self, input_shape):
        self.seen = self.add_weight(shape=(), initializer="zeros", trainable=False, name="seen")

    def call(self, inputs, training=False):
        if training:
            self.seen.assign_add(ops.cast(ops.shape(inputs)[0], self.seen.dtype))
        return inputs * ops.minimum(1.0, (self.seen + 1.0) / 256.0)


def build_model():
    inputs = keras.Input((8,))
    hidden = FadeIn(name="fade_in")(keras.layers.Dense(16, activation="relu")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1))).astype("float32")
    return (x[:128], y[:128]), (x[128:], y[128:])
