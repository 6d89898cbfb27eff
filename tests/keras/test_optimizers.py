"""Loss scaling (mixed_float16, LossScaleOptimizer), clipping, the dtype policy and schedules."""

import dataclasses

import keras
import numpy as np
import pytest

from tests.keras.helpers import (
    FILES,
    FLOAT64,
    assert_same_weights,
    kill_mid_epoch_then_resume,
    largest_difference,
    load,
    one_and_two,
    strict,
)
from tests.support import cpu_strategy
from tests.test_training_tasks import replica_copies
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.tasks import adapter


@pytest.mark.parametrize(
    "clip", [{"clipnorm": 0.05}, {"global_clipnorm": 0.05}, {"clipvalue": 0.002}], ids=str
)
def test_clipping_acts_on_the_global_gradient_so_two_replicas_equal_one_device(clip):
    one, two = one_and_two(load("adamw_clip", CLIP=clip))
    unclipped = training.run(
        dataclasses.replace(FLOAT64, batch_size=32),
        load("adamw_clip", CLIP={}),
        strategy=cpu_strategy(1),
    )
    assert largest_difference(one, unclipped) > 1e-3, "the clip never acted: this proves nothing"
    assert_same_weights(one, two, atol=1e-10)


def test_a_loss_scale_optimizer_on_float32_trains_exactly_as_its_inner_optimizer():
    # The scale is a power of two: scaling and unscaling a float32 gradient is exact.
    config = dataclasses.replace(FLOAT64, dtype="float32")
    scaled = training.run(config, load("loss_scale_sgd"), strategy=cpu_strategy(2))
    plain = training.run(config, load("loss_scale_sgd", LOSS_SCALE=False), strategy=cpu_strategy(2))
    assert scaled.summary["weights_sha256"] == plain.summary["weights_sha256"]
    assert scaled.summary["test_accuracy"] > 0.8
    assert scaled.summary["learning_rate"] == pytest.approx(0.1)
    held = [v.path for v in scaled.state.checkpointed()["optimizer"]]
    assert any("dynamic_scale" in path for path in held), held


def test_loss_scaling_skips_overflowing_steps_agreed_by_every_replica_and_counts_steps():
    # float16 overflows at 65,504: a scale of 2**40 overflows every gradient at first,
    # so the optimizer skips steps and halves the scale until they fit.
    class Overflowing:
        def __init__(self):
            self.file = load("mixed16_in_build")
            self.load_data = self.file.load_data

        def build_model(self):
            model = self.file.build_model()
            model.compile(
                optimizer=keras.optimizers.LossScaleOptimizer(
                    keras.optimizers.SGD(0.1), initial_scale=2.0**40
                ),
                loss=model.loss,
                metrics=["accuracy"],
            )
            return model

    config = Config(batch_size=16, epochs=3, seed=3, jit_compile=False)
    result = training.run(config, Overflowing(), strategy=cpu_strategy(2))
    optimizer = result.state.optimizer
    steps = 3 * (1024 // 32)
    assert result.summary["dtype"] == "mixed_float16"
    assert 0 < float(optimizer.dynamic_scale.numpy()) < 2.0**40, "no step was skipped"
    skipped = steps - int(optimizer.iterations.numpy())
    assert 0 < skipped < steps, f"{skipped} of {steps} steps skipped"
    assert int(result.state.steps.numpy()) == steps, "a skipped step still takes its batch"
    assert result.summary["test_accuracy"] > 0.6
    for variable in result.state.variables():
        first, second = replica_copies(variable)
        np.testing.assert_array_equal(first, second, getattr(variable, "path", variable.name))


def test_mixed_float16_set_in_build_model_learns_on_two_replicas():
    config = Config(batch_size=16, epochs=3, seed=3, jit_compile=False)
    mixed = training.run(config, load("mixed16_in_build"), strategy=cpu_strategy(2))
    assert mixed.summary["dtype"] == "mixed_float16"
    assert isinstance(mixed.state.optimizer, keras.optimizers.LossScaleOptimizer)
    assert mixed.summary["learning_rate"] == pytest.approx(0.1)
    assert mixed.summary["test_accuracy"] > 0.75  # chance is 1/3; float32 reaches 0.79 here


def test_a_policy_set_at_the_top_of_the_file_is_the_runs_unless_dtype_says_otherwise():
    path = str(FILES / "mixed16_at_top.py")
    assert adapter.load(path).dtype == "mixed_float16"
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False)
    result = training.run(dataclasses.replace(config, task=path), strategy=cpu_strategy(1))
    assert result.summary["dtype"] == "mixed_float16"
    assert result.state.model.layers[0].compute_dtype == "float16"
    assert keras.config.dtype_policy().name == "float32", "the task's policy outlived its run"
    forced = dataclasses.replace(config, task=path, dtype="float32")
    result = training.run(forced, strategy=cpu_strategy(1))
    assert result.summary["dtype"] == "float32"


def test_a_schedule_trains_and_every_file_written_is_strict_json(tmp_path):
    config = Config(batch_size=16, epochs=2, seed=3, model_dir=str(tmp_path))
    training.run(config, load("adam_decay"), strategy=cpu_strategy(2))
    written = sorted(tmp_path.rglob("*.json")) + sorted(tmp_path.rglob("*.jsonl"))
    assert {p.name for p in written} >= {"summary.json", "metrics.jsonl"}
    for path in written:
        strict(path)
    (summary,) = strict(tmp_path / "summary.json")
    schedule = summary["learning_rate_schedule"]
    assert schedule["class_name"] == "ExponentialDecay"
    assert schedule["config"]["decay_steps"] == 10
    assert summary["learning_rate"] is None  # no single peak: the schedule says it all


@pytest.mark.cluster
def test_mixed_float16_killed_mid_epoch_resumes_to_the_same_weights(tmp_path):
    args = [f"--task={FILES / 'mixed16_in_build.py'}", "--num_cpu_devices=2", "--batch_size=16"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32)
