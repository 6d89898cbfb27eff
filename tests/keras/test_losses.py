"""A compiled loss's own reduction: the engine reduces per-example losses itself."""

import numpy as np
import pytest

from tests.keras.helpers import assert_same_weights, load, one_and_two
from tests.test_training_tasks import weights


@pytest.fixture(scope="module")
def default_reduction():
    """(one device, 2 replicas) for the loss with Keras's default reduction."""
    return one_and_two(load("loss_reduction"))


@pytest.mark.parametrize("reduction", ["sum", "none"])
def test_a_loss_reduction_of_its_own_trains_exactly_as_the_default(reduction, default_reduction):
    one, two = one_and_two(load("loss_reduction", REDUCTION=reduction))
    default_one, default_two = default_reduction
    # 2 replicas == 1 device (float64, as every equivalence), and each side the same
    # weights, bit for bit, as the default reduction's: the reduction was not used.
    assert_same_weights(two, one, atol=1e-10)
    for ours, default in ((one, default_one), (two, default_two)):
        for a, b in zip(weights(ours.state.model), weights(default.state.model), strict=True):
            np.testing.assert_array_equal(a, b)
        assert ours.summary["test_loss"] == default.summary["test_loss"]
    history = [epoch["train_loss"] for epoch in default_one.summary["history"]]
    assert history[-1] < 0.8 * history[0], f"training barely moved the loss: {history}"
