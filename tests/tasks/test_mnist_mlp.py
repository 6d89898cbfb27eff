"""The built-in task mnist_mlp (the seed's network) in a strategy scope; the rate schedules."""

import keras
import numpy as np
import pytest

from tests.support import cpu_strategy
from tf_mgpu.engine.model import schedules
from tf_mgpu.tasks import mnist_mlp


def test_architecture_is_flatten_dense128_relu_dense10():
    net = mnist_mlp.build_model()
    dense = [layer for layer in net.layers if isinstance(layer, keras.layers.Dense)]
    assert isinstance(net.layers[0], keras.layers.Flatten)
    assert [(d.units, d.activation.__name__) for d in dense] == [(128, "relu"), (10, "linear")]
    assert net.count_params() == 784 * 128 + 128 + 128 * 10 + 10
    assert net(np.zeros((3, 28, 28), np.float32)).shape == (3, 10)


def test_optimizer_is_plain_sgd():
    optimizer = mnist_mlp.build_model().optimizer
    assert isinstance(optimizer, keras.optimizers.SGD)
    assert np.isclose(float(optimizer.learning_rate), 0.01)
    assert float(optimizer.momentum) == 0.0


def test_scope_gives_one_copy_of_every_variable_per_replica():
    strategy = cpu_strategy(2)
    with strategy.scope():
        net = mnist_mlp.build_model()
    for weight in net.weights:
        copies = weight.value.values
        assert len(copies) == 2, weight.path
        np.testing.assert_array_equal(copies[0].numpy(), copies[1].numpy(), weight.path)


def test_warmup_rises_linearly_to_the_peak_then_stays():
    schedule = schedules.LinearWarmup(0.01, 0.05, warmup_steps=4)
    rates = [float(schedule(step)) for step in range(7)]
    np.testing.assert_allclose(rates, [0.01, 0.02, 0.03, 0.04, 0.05, 0.05, 0.05], rtol=1e-6)
    assert schedules.LinearWarmup(**schedule.get_config()).peak == 0.05


def test_linear_scaling_rule():
    def rate(**kw):
        return schedules.learning_rate(0.01, reference_batch=64, **kw)

    assert rate(global_batch=256, scale=False, warmup_steps=10) == 0.01
    assert rate(global_batch=256, scale=True, warmup_steps=0) == pytest.approx(0.04)
    assert rate(global_batch=32, scale=True, warmup_steps=10) == pytest.approx(0.005)
    warm = rate(global_batch=256, scale=True, warmup_steps=10)
    assert isinstance(warm, schedules.LinearWarmup)
    assert (warm.start, schedules.peak_rate(warm)) == (0.01, pytest.approx(0.04))
