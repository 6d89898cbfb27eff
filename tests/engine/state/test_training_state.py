"""The training state's randomness: each replica its own dropout masks, reproducible, saved."""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from tests.support import cpu_strategy
from tf_mgpu.config import Config
from tf_mgpu.engine.input import data
from tf_mgpu.engine.state import training_state as state_module
from tf_mgpu.engine.task import Task


def dropout_task() -> Task:
    def build_model():
        model = keras.Sequential([keras.Input((256,)), keras.layers.Dropout(0.5)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    return Task(name="dropout", where="dropout", build_model=build_model, load_data=None)


def masks(replicas: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Each replica's dropout mask for one draw, and the random state after it."""
    strategy = cpu_strategy(replicas)
    sample = data.Split(np.ones((2, 256), np.float32), np.ones((2, 256), np.float32))
    state = state_module.create_state(strategy, Config(seed=seed), dropout_task(), sample)

    @tf.function
    def draw():
        def replica():
            with state_module.replica_random_streams(state):
                return state.model(tf.ones((1, 256)), training=True)

        return strategy.run(replica)

    drawn = [np.array(t.numpy()) != 0 for t in strategy.experimental_local_results(draw())]
    (random,) = state.random_states()
    copies = random.value.values if hasattr(random.value, "values") else [random.value]
    after = [np.array(c.numpy()) for c in copies]
    for copy in after[1:]:
        np.testing.assert_array_equal(copy, after[0])  # the same state on every replica
    return drawn, after[0]


def test_each_replica_draws_its_own_masks_from_the_state_one_device_would_have():
    (one,), one_state = masks(1)
    two, two_state = masks(2)
    assert not np.array_equal(two[0], two[1]), "both replicas drew the same mask"
    np.testing.assert_array_equal(two[0], one)  # replica 0 draws what one device draws
    np.testing.assert_array_equal(two_state, one_state)


def test_masks_are_reproducible_from_the_seed():
    first, _ = masks(2, seed=4)
    again, _ = masks(2, seed=4)
    other, _ = masks(2, seed=5)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_the_random_state_is_checkpointed_only_when_the_model_has_one():
    sample = data.Split(np.ones((2, 256), np.float32), np.ones((2, 256), np.float32))
    state = state_module.create_state(cpu_strategy(1), Config(), dropout_task(), sample)
    (random,) = state.checkpointed()["random"]
    assert random.path.endswith("seed_generator_state"), random.path

    def build_dense():
        model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(256)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    dense = dataclasses.replace(dropout_task(), build_model=build_dense)
    assert (
        "random"
        not in state_module.create_state(cpu_strategy(1), Config(), dense, sample).checkpointed()
    )
