"""tf_mgpu/engine/model/added_losses.py: which added losses hold one value per example."""

import keras
import numpy as np
from keras import layers, ops

from tf_mgpu.engine.model import added_losses


class Penalties(layers.Layer):
    """Adds a loss per example (as a CTC layer), one per unit (a mean over the batch, as many
    units as the batch has rows) and one scalar."""

    def call(self, x):
        self.add_loss(ops.sum(ops.square(x), axis=-1, keepdims=True))
        self.add_loss(ops.mean(ops.square(x), axis=0))
        self.add_loss(ops.mean(x))
        return x


def test_only_an_added_loss_that_follows_the_rows_is_one_value_per_example():
    inputs = keras.Input((4,))
    model = keras.Model(inputs, Penalties()(layers.Dense(4)(inputs)))
    x = np.ones((4, 4), "float32")  # 4 rows and 4 units: the shapes alone cannot tell
    model(x)
    added_losses.find(model, x)
    model(x)
    assert [tuple(a.shape) for a in added_losses.per_example(model)] == [(4, 1)]
