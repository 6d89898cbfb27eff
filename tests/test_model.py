"""The seed's network, built in a strategy scope."""

import keras
import numpy as np

from tests.support import cpu_strategy
from tf_mgpu import model


def test_architecture_is_flatten_dense128_relu_dense10():
    net = model.build_model()
    dense = [layer for layer in net.layers if isinstance(layer, keras.layers.Dense)]
    assert isinstance(net.layers[0], keras.layers.Flatten)
    assert [(d.units, d.activation.__name__) for d in dense] == [(128, "relu"), (10, "linear")]
    assert net.count_params() == 784 * 128 + 128 + 128 * 10 + 10
    assert net(np.zeros((3, 28, 28), np.float32)).shape == (3, 10)


def test_optimizer_is_plain_sgd():
    optimizer = model.build_optimizer(0.05)
    assert isinstance(optimizer, keras.optimizers.SGD)
    assert np.isclose(float(optimizer.learning_rate), 0.05)
    assert float(optimizer.momentum) == 0.0


def test_scope_gives_one_copy_of_every_variable_per_replica():
    strategy = cpu_strategy(2)
    with strategy.scope():
        net = model.build_model()
    for weight in net.weights:
        copies = weight.value.values
        assert len(copies) == 2, weight.path
        np.testing.assert_array_equal(copies[0].numpy(), copies[1].numpy(), weight.path)
