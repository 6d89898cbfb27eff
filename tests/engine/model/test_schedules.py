"""Every Keras learning-rate schedule, and a callable, as the summary records them."""

import json

import keras
import pytest

from tf_mgpu import strict_json
from tf_mgpu.engine.model import schedules

SCHEDULES = [
    keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9),
    keras.optimizers.schedules.PiecewiseConstantDecay([10, 20], [0.1, 0.05, 0.01]),
    keras.optimizers.schedules.PolynomialDecay(0.1, 100),
    keras.optimizers.schedules.InverseTimeDecay(0.1, 10, 0.5),
    keras.optimizers.schedules.CosineDecay(0.1, 100, warmup_target=0.2, warmup_steps=10),
    keras.optimizers.schedules.CosineDecayRestarts(0.1, 10),
]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: type(s).__name__)
def test_a_schedule_is_recorded_in_keras_serialized_form_and_strict_json(schedule):
    described = schedules.describe(schedule)
    assert described["learning_rate"] is None
    text = strict_json.dumps(described)
    again = keras.saving.deserialize_keras_object(json.loads(text)["learning_rate_schedule"])
    assert type(again) is type(schedule)
    assert schedules.rate_at(schedule, 5) == pytest.approx(float(schedule(5)))


def test_a_callable_rate_is_recorded_by_name_and_read_as_keras_reads_it():
    def halving():
        return 0.05

    described = schedules.describe(halving)
    assert described == {
        "learning_rate": None,
        "learning_rate_schedule": {
            "callable": (
                "test_a_callable_rate_is_recorded_by_name_and_read_as_keras_reads_it.<locals>.halving"
            )
        },
    }
    assert schedules.rate_at(halving, 7) == 0.05  # Keras calls it with no argument


def test_warmup_and_a_constant_rate_record_their_peak():
    assert schedules.describe(0.1) == {"learning_rate": 0.1}
    warm = schedules.LinearWarmup(0.1, 0.4, 10)
    assert schedules.describe(warm)["learning_rate"] == 0.4
    assert schedules.rate_at(warm, 5) == pytest.approx(0.25)


def test_the_rate_of_a_loss_scale_optimizer_is_its_inner_optimizers():
    inner = keras.optimizers.SGD(0.1)
    wrapped = keras.optimizers.LossScaleOptimizer(inner)
    assert schedules.inner(wrapped) is inner
    assert schedules.inner(inner) is inner
