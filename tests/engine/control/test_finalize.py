"""The optimizer's final weights (use_ema's average), set on every replica's copy."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy
from tests.test_training_tasks import replica_copies
from tf_mgpu.engine.control import finalize


def built(strategy, optimizer):
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        optimizer = optimizer()
        model.compile(optimizer=optimizer, loss="mse")
        optimizer.build(model.trainable_variables)
    return types.SimpleNamespace(state=types.SimpleNamespace(model=model, optimizer=optimizer))


@pytest.mark.parametrize("replicas", [1, 2])
def test_every_replicas_copy_takes_the_average(replicas):
    strategy = cpu_strategy(replicas)
    trainer = built(strategy, lambda: keras.optimizers.AdamW(use_ema=True))
    averages = trainer.state.optimizer._model_variables_moving_average
    for i, average in enumerate(averages):
        average.assign(tf.fill(average.shape, float(i + 7)))
    ending = finalize.Finalize(trainer, strategy)
    ending.finish_training()
    assert ending.changed
    for i, weight in enumerate(trainer.state.model.trainable_variables):
        copies = replica_copies(weight) if replicas > 1 else [weight.numpy()]
        assert len(copies) == replicas
        for copy in copies:
            np.testing.assert_array_equal(copy, np.full(weight.shape, i + 7.0), weight.path)
    ending.finish_training()  # twice in a row: nothing moves
    assert not ending.changed


def test_only_an_optimizer_that_finalizes_is_asked():
    strategy = cpu_strategy(1)
    plain = built(strategy, lambda: keras.optimizers.Adam())
    ending = finalize.Finalize(plain, strategy)
    ending.finish_training()
    assert not ending.changed
    assert not finalize.finalizes(plain.state.optimizer)
    scaled = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(use_ema=True))
    assert finalize.finalizes(scaled)
    assert finalize.describe(scaled) == "SGD(use_ema=True) set the weights to their moving average"

    class Own(keras.optimizers.SGD):
        def finalize_variable_values(self, var_list):
            for v in var_list:
                v.assign(tf.zeros_like(v))

    own = built(strategy, Own)
    assert finalize.finalizes(own.state.optimizer)
    ending = finalize.Finalize(own, strategy)
    ending.finish_training()
    assert ending.changed
    assert finalize.describe(own.state.optimizer) == "Own.finalize_variable_values set the weights"
