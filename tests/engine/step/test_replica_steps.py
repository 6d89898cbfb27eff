"""How much gradient a training step all-reduces: once, under loss scaling too (where the
gradient was reduced twice), and sparse gradients as slices. Clipping reduces it twice:
Keras's optimizer all-reduces inside `apply`, after it clipped each replica's share."""

import dataclasses
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import load
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config

CONFIG = Config(batch_size=16, epochs=1, seed=3, jit_compile=False)
REPLICAS = 2


def reduced(task, config: Config) -> tuple[list, list]:
    """What each replica's traced training step handed to all-reduces, and the trainable
    variables: every `ReplicaContext.all_reduce`, the optimizer's own included."""
    handed = []
    original = tf.distribute.ReplicaContext.all_reduce

    def counting(self, reduce_op, value, options=None):
        handed.extend(tf.nest.flatten(value))
        return original(self, reduce_op, value, options)

    with mock.patch.object(tf.distribute.ReplicaContext, "all_reduce", counting):
        result = training.run(config, task, strategy=cpu_strategy(REPLICAS))
    return handed, result.state.model.trainable_variables


def dense_gradients_reduced(task, config: Config) -> float:
    """How many times each replica all-reduced a gradient's worth of every trainable variable."""
    handed, trainable = reduced(task, config)
    shapes = {tuple(v.shape) for v in trainable}
    size = sum(int(np.prod(v.shape)) for v in trainable)
    dense = [t for t in handed if not isinstance(t, tf.IndexedSlices)]
    elements = sum(int(np.prod(t.shape)) for t in dense if tuple(t.shape) in shapes)
    return elements / size / REPLICAS


@pytest.mark.parametrize(
    ("settings", "times"),
    [({}, 1), ({"dtype": "mixed_float16"}, 1)],
    ids=["sgd", "mixed_float16"],
)
def test_the_gradient_is_all_reduced_once_per_step(settings, times):
    config = dataclasses.replace(CONFIG, **settings)
    assert dense_gradients_reduced(load("adam_decay"), config) == times


def test_clipping_reduces_the_gradient_twice_as_keras_reduces_inside_apply():
    assert dense_gradients_reduced(load("adamw_clip"), CONFIG) == 2


def test_an_embeddings_gradient_stays_sparse_under_loss_scaling():
    config = dataclasses.replace(CONFIG, dtype="mixed_float16")
    handed, trainable = reduced(load("position_embedding"), config)
    # The token table, 200 x 8: its slices are (tokens of a share, 8), 192 rows.
    (table,) = [v for v in trainable if tuple(v.shape) == (200, 8)]
    dense = {tuple(t.shape) for t in handed if not isinstance(t, tf.IndexedSlices)}
    assert tuple(table.shape) not in dense, "the table's gradient was made dense"
    assert any(isinstance(t, tf.IndexedSlices) for t in handed), "no slices reduced"
