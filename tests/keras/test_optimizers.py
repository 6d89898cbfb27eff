"""Loss scaling (mixed_float16, LossScaleOptimizer), clipping, the dtype policy, schedules
and an optimizer's moving average of the weights (use_ema)."""

import dataclasses
import json
import signal

import keras
import numpy as np
import pytest

from tests.keras.helpers import (
    FILES,
    FLOAT64,
    assert_same_weights,
    keras_fit_in_tf_mgpus_order,
    kill_mid_epoch_then_resume,
    largest_difference,
    load,
    one_and_two,
    strict,
    trained_like_keras,
    two_workers_and_one_device,
)
from tests.support import cpu_strategy
from tests.test_training_tasks import replica_copies
from tf_mgpu import errors, training
from tf_mgpu.config import Config
from tf_mgpu.engine.faults import stopping
from tf_mgpu.engine.step import masked_losses, sparse_gradients
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


def test_the_optimizers_gradient_accumulation_runs_exactly_on_two_replicas(capsys):
    # Keras's own accumulation fails under any strategy (merge_call inside a cond);
    # tf_mgpu runs it as its own: 2 replicas x 8 examples x 4 micro-batches per update.
    task = load("gradient_accumulation")
    two = training.run(dataclasses.replace(FLOAT64, batch_size=8), task, strategy=cpu_strategy(2))
    start = next(line for line in capsys.readouterr().out.splitlines() if "start:" in line)
    assert (
        "batch_size=8/replica x 4 accumulation steps (the optimizer's "
        "gradient_accumulation_steps) global_batch=64" in start
    )
    assert two.summary["accumulation_steps"] == 4
    # Keras fit on one device, batches of 16, its optimizer accumulating 4 of them: the
    # same 64 examples per update, in the order tf_mgpu trains them.
    fitted = keras_fit_in_tf_mgpus_order(task, epochs=2, global_batch=16)
    assert fitted.optimizer.iterations.numpy() == 2 * 1024 // 64  # Keras counts updates
    # Keras keeps the learning rate and momentum in float32 (1.3e-8 seen, as with use_ema);
    # a wrong accumulation (each batch applied, or a sum) moves the weights by 1e-2.
    for mine, keras_own in zip(two.state.model.weights, fitted.weights, strict=True):
        np.testing.assert_allclose(mine.numpy(), keras_own.numpy(), atol=1e-6, rtol=0)
    every_batch = training.run(
        dataclasses.replace(FLOAT64, batch_size=8, accumulation_steps=1),
        load("gradient_accumulation", ACCUMULATE=None),
        strategy=cpu_strategy(2),
    )
    assert largest_difference(two, every_batch) > 1e-2, "accumulating changed nothing"


def test_accumulation_steps_that_disagree_with_the_optimizers_are_refused():
    config = dataclasses.replace(FLOAT64, accumulation_steps=2)
    with pytest.raises(errors.UserError, match="gradient_accumulation_steps=4 and "):
        training.run(config, load("gradient_accumulation"), strategy=cpu_strategy(1))


def test_use_ema_ends_with_the_averaged_weights_as_keras_fit_ends_and_exports_them(tmp_path):
    one = training.run(
        dataclasses.replace(FLOAT64, batch_size=32), load("adamw_ema"), strategy=cpu_strategy(1)
    )
    config = dataclasses.replace(FLOAT64, model_dir=str(tmp_path))
    two = training.run(config, load("adamw_ema"), strategy=cpu_strategy(2))
    assert_same_weights(one, two, atol=1e-10)
    optimizer = two.state.optimizer
    for weight, average in zip(
        two.state.model.trainable_variables, optimizer._model_variables_moving_average, strict=True
    ):
        np.testing.assert_array_equal(weight.numpy(), average.numpy(), weight.path)
    # Keras's float32 losses round the gradients: fit agrees to ~1e-7, where the average
    # and the last weights differ by ~1e-2.
    fitted = keras_fit_in_tf_mgpus_order(load("adamw_ema"), epochs=2, global_batch=32)
    for a, b in zip(fitted.weights, two.state.model.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, rtol=0, err_msg=b.path)
    last = two.summary["history"][-1]
    assert abs(two.summary["test_loss"] - last["test_loss"]) > 1e-3, "evaluated again"
    (_, _), (x_test, y_test) = load("adamw_ema").load_data()
    exported = keras.saving.load_model(tmp_path / "model.keras")
    for model in (exported, fitted):
        says = model.evaluate(x_test, y_test, return_dict=True, verbose=0)
        assert two.summary["test_loss"] == pytest.approx(says["loss"], abs=1e-6)
        assert two.summary["test_accuracy"] == pytest.approx(says["accuracy"], abs=1e-9)
    # The final checkpoint holds them too: a rerun that finishes a failed export writes them.
    summary = json.loads((tmp_path / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "exports": []}))
    (tmp_path / "model.keras").unlink()
    assert training.run(config, load("adamw_ema"), strategy=cpu_strategy(2)) is None
    again = keras.saving.load_model(tmp_path / "model.keras")
    for a, b in zip(again.weights, exported.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), b.path)


class SigtermAt(keras.callbacks.Callback):
    """A SIGTERM that lands once training passed `step` (never, for None)."""

    def __init__(self, step, stop):
        super().__init__()
        self.step, self.stop = step, stop

    def on_train_batch_end(self, batch, logs=None):
        if self.step is not None and int(self.model.optimizer.iterations.numpy()) >= self.step:
            self.stop._handle(signal.SIGTERM, None)


def test_use_ema_stopped_mid_run_finalizes_once_at_the_very_end(tmp_path):
    def task(step=None, stop=None):
        module = load("adamw_ema")
        module.callbacks = lambda: [SigtermAt(step, stop)]
        return module

    config = dataclasses.replace(FLOAT64, epochs=3, steps_per_loop=4)
    straight = training.run(config, task(), strategy=cpu_strategy(2))
    config = dataclasses.replace(config, model_dir=str(tmp_path))
    stop = stopping.Stop()
    with pytest.raises(errors.Stopped):  # mid-way through the second epoch
        training.run(config, task(40, stop), strategy=cpu_strategy(2), stop=stop)
    resumed = training.run(config, task(), strategy=cpu_strategy(2))
    assert resumed.summary["weights_sha256"] == straight.summary["weights_sha256"]
    assert resumed.summary["test_loss"] == straight.summary["test_loss"]


@pytest.mark.cluster
def test_use_ema_on_two_real_workers_ends_as_one_device(tmp_path):
    task = str(FILES / "adamw_ema.py")
    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=2)
    assert cluster["test_loss"] == pytest.approx(one.summary["test_loss"], abs=1e-9)
    assert cluster["test_loss"] != cluster["history"][-1]["test_loss"]


def test_a_loss_scale_optimizer_on_float32_trains_exactly_as_its_inner_optimizer():
    # The scale is a power of two: scaling and unscaling a float32 gradient is exact.
    config = dataclasses.replace(FLOAT64, dtype="float32")
    scaled = training.run(config, load("loss_scale_sgd"), strategy=cpu_strategy(2))
    plain = training.run(config, load("loss_scale_sgd", LOSS_SCALE=False), strategy=cpu_strategy(2))
    assert scaled.summary["weights_sha256"] == plain.summary["weights_sha256"]
    assert scaled.summary["test_accuracy"] > 0.8
    assert scaled.summary["learning_rate"] == pytest.approx(0.1)
    held = scaled.state.checkpointed()["optimizer"]
    assert "loss_scale_dynamic_scale" in held, sorted(held)


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


def test_a_bfloat16_policy_of_the_file_trains_and_exports(tmp_path):
    # Keras's pure bfloat16 (no --dtype names it): its weights' digest once failed at the end.
    path = str(FILES / "bfloat16_at_top.py")
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False, model_dir=str(tmp_path))
    result = training.run(dataclasses.replace(config, task=path), strategy=cpu_strategy(2))
    assert result.summary["dtype"] == "bfloat16"
    assert result.state.model.weights[0].dtype == "bfloat16"
    assert (tmp_path / "model.keras").exists()


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


def test_adam_over_a_position_embedding_trains_on_two_replicas_as_on_one_device(
    tmp_path, monkeypatch
):
    # Keras's Adam squares an embedding's gradient slice by slice: a position embedding gives
    # one slice per position on one device, but one per position and replica after the
    # optimizer's all-reduce. tf_mgpu hands the optimizer one device's slices.
    trained_like_keras("position_embedding", tmp_path)  # == Keras fit on one device, 1e-6
    # Without that, as Keras's own fit on 2 replicas: Adam's second moments differ.
    monkeypatch.setattr(sparse_gradients, "as_one_device", lambda grads: grads)
    config = dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path / "as_keras"))
    as_keras = training.run(config, load("position_embedding"), strategy=cpu_strategy(2))
    fitted = keras_fit_in_tf_mgpus_order(load("position_embedding"), 1, 32)
    assert largest_difference_to(as_keras, fitted) > 1e-4, "the slices never mattered"


def largest_difference_to(run, model: keras.Model) -> float:
    return max(
        float(np.max(np.abs(a.numpy() - b.numpy())))
        for a, b in zip(run.state.model.weights, model.weights, strict=True)
    )


def test_a_masked_per_token_loss_trains_on_two_replicas_as_on_one_device(tmp_path, monkeypatch):
    # Keras averages a masked output's loss over the real tokens of the share it is handed;
    # tf_mgpu weighs each share so the replicas' parts make the global batch's mean.
    trained_like_keras("masked_tokens", tmp_path)  # weights == fit's; test figures == evaluate's
    # Without that, as Keras's own fit on 2 replicas: a mean of two shares' means.
    monkeypatch.setattr(masked_losses, "_mask", lambda model, y_pred: None)
    config = dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path / "as_keras"))
    as_keras = training.run(config, load("masked_tokens"), strategy=cpu_strategy(2))
    fitted = keras_fit_in_tf_mgpus_order(load("masked_tokens"), 1, 32)
    assert largest_difference_to(as_keras, fitted) > 1e-4, "the shares' token counts never mattered"
