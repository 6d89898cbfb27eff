"""A compiled loss's own reduction trains as Keras `fit` trains it on one device, on any
number of replicas."""

import dataclasses

import numpy as np
import pytest

from tests.keras.helpers import (
    FLOAT64,
    assert_same_weights,
    keras_fit_in_tf_mgpus_order,
    load,
    one_and_two,
)
from tests.support import cpu_strategy
from tests.test_training_tasks import weights
from tf_mgpu import training
from tf_mgpu.errors import UserError


@pytest.mark.parametrize("reduction", ["sum", "none", "sum_over_batch_size"])
def test_a_loss_reduction_of_its_own_trains_as_keras_fit_on_one_device(reduction):
    task = load("loss_reduction", REDUCTION=reduction)
    one, two = one_and_two(task)
    # 2 replicas == 1 device (float64, as every equivalence).
    assert_same_weights(two, one, atol=1e-10)
    # == Keras fit on one device, whose loss sums over the batch for "sum" and none:
    # Keras's scaling by the replicas would have made 2 replicas take half the step.
    keras_model = keras_fit_in_tf_mgpus_order(task, epochs=2, global_batch=32)
    for a, b in zip(weights(one.state.model), keras_model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    history = [epoch["train_loss"] for epoch in one.summary["history"]]
    assert history[-1] < 0.8 * history[0], f"training barely moved the loss: {history}"


def test_mean_with_sample_weight_is_refused_in_one_line_on_two_replicas_and_trains_on_one():
    # Each replica would divide its share by its own weights' sum, which no scaling turns
    # into the global batch's: refused on 2 replicas, as docs/from-fit.md lists it.
    task = load("loss_reduction", REDUCTION="mean_with_sample_weight")
    with pytest.raises(UserError, match="reduction 'mean_with_sample_weight' divides each"):
        training.run(FLOAT64, task, strategy=cpu_strategy(2))
    one = training.run(dataclasses.replace(FLOAT64, epochs=1), task, strategy=cpu_strategy(1))
    assert np.isfinite(one.summary["test_loss"])
