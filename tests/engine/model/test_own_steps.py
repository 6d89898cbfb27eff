"""tf_mgpu/engine/model/own_steps.py: which of Keras's steps a model's class brings."""

import keras
import pytest

from tf_mgpu.engine.model import own_steps


class OwnTrainStep(keras.Model):
    def train_step(self, data):
        return super().train_step(data)


class OwnTestStep(keras.Model):
    def test_step(self, data):
        return super().test_step(data)


class OwnLoss(keras.Model):
    def compute_loss(self, *args, **kwargs):
        return super().compute_loss(*args, **kwargs)


@pytest.mark.parametrize(
    ("model_class", "trains", "evaluates", "named"),
    [
        (keras.Model, False, False, []),
        (OwnTrainStep, True, False, ["OwnTrainStep.train_step"]),
        (OwnTestStep, False, True, ["OwnTestStep.test_step"]),
        (OwnLoss, True, True, ["OwnLoss.compute_loss"]),
    ],
    ids=["keras", "train_step", "test_step", "compute_loss"],
)
def test_a_class_that_overrides_a_step_or_the_loss_runs_its_own(
    model_class, trains, evaluates, named
):
    net = model_class.__new__(model_class)  # the class alone decides: nothing is built
    assert own_steps.runs_own_step(net) is trains
    assert own_steps.evaluates_own_step(net) is evaluates
    assert own_steps.overridden(net) == named
