"""Keras callbacks from a task's callbacks(), run as fit runs them, on replicas and resumed."""

import dataclasses
import json

import keras
import numpy as np
import pytest

from tests.keras.helpers import (
    FILES,
    FLOAT64,
    assert_same_weights,
    kill_mid_epoch_then_resume,
    load,
    one_and_two,
    strict,
    two_workers_and_one_device,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError


def kept(**settings):
    """with_callbacks.py, whose callbacks() returns one list the test holds on to."""
    task = load("with_callbacks", **settings)
    held = task.callbacks()
    task.callbacks = lambda: held
    return task, held


def test_callbacks_change_the_rate_alike_on_two_replicas_and_one_device():
    # A plateau schedule that halves the rate at every epoch that does not improve by 0.05.
    task = load("with_callbacks")
    task.callbacks = lambda: [
        load("with_callbacks").callbacks()[0],
        keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", factor=0.5, patience=0, min_delta=0.05
        ),
    ]
    one, two = one_and_two(task, dataclasses.replace(FLOAT64, epochs=4))
    assert_same_weights(one, two, atol=1e-10)
    rate = float(two.state.optimizer.learning_rate.numpy())
    assert rate < 0.2 * 0.8**3 * 0.9, "the plateau schedule never acted: this proves nothing"
    assert float(one.state.optimizer.learning_rate.numpy()) == rate


def test_batch_hooks_run_once_per_compiled_call_and_epoch_hooks_see_keras_names():
    task, held = kept()
    logs = []
    held.append(keras.callbacks.LambdaCallback(on_epoch_end=lambda e, log: logs.append(log)))
    result = training.run(
        dataclasses.replace(FLOAT64, epochs=2, steps_per_loop=10), task, strategy=cpu_strategy(2)
    )
    steps = result.summary["steps_per_epoch"]
    assert held[3].batch_ends == 2 * -(-steps // 10)
    assert held[3].rates == pytest.approx([0.2, 0.16])  # LearningRateScheduler's x 0.8
    assert set(logs[-1]) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert not any(key.startswith("test_") for key in logs[-1])
    assert logs[-1]["val_loss"] == result.summary["val_loss"]


def test_early_stopping_stops_and_the_summary_holds_the_restored_best_weights(tmp_path):
    # No epoch improves on the first by 10: stop after PATIENCE more, back to epoch 1's weights.
    task = load("with_callbacks", MIN_DELTA=10.0, PATIENCE=2)
    config = dataclasses.replace(FLOAT64, epochs=10, model_dir=str(tmp_path))
    stopped = training.run(config, task, strategy=cpu_strategy(2))
    assert len(stopped.summary["history"]) == 3
    assert stopped.summary["stopped_by"] == "EarlyStopping"
    first = training.run(
        dataclasses.replace(config, epochs=1, model_dir=None),
        load("with_callbacks", MIN_DELTA=10.0),
        strategy=cpu_strategy(2),
    )
    assert stopped.summary["weights_sha256"] == first.summary["weights_sha256"]
    (_, _), _, (x_test, y_test) = task.load_data()
    keras_says = stopped.state.model.evaluate(x_test, y_test, return_dict=True, verbose=0)
    assert stopped.summary["test_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
    assert stopped.summary["test_loss"] != stopped.summary["history"][-1]["test_loss"]
    # Run again: the checkpoint says training was stopped, so nothing more is trained; it
    # holds the restored weights, which a rerun finishing a failed export writes.
    summary = json.loads((tmp_path / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "exports": []}))
    (tmp_path / "model.keras").unlink()
    again = training.run(config, load("with_callbacks", MIN_DELTA=10.0), strategy=cpu_strategy(2))
    assert again is None
    exported = keras.saving.load_model(tmp_path / "model.keras")
    keras_says = exported.evaluate(x_test, y_test, return_dict=True, verbose=0)
    assert stopped.summary["test_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)


def test_callback_state_is_in_the_checkpoint_and_a_resumed_run_continues_it(tmp_path):
    task = load("with_callbacks")
    config = dataclasses.replace(FLOAT64, epochs=3, model_dir=str(tmp_path))
    training.run(dataclasses.replace(config, epochs=2), task, strategy=cpu_strategy(2))
    resumed_task, resumed = kept()
    training.run(config, resumed_task, strategy=cpu_strategy(2))
    straight_task, straight = kept()
    training.run(
        dataclasses.replace(config, model_dir=None), straight_task, strategy=cpu_strategy(2)
    )
    assert resumed[3].rates == straight[3].rates  # the user's own callback's list, continued
    assert len(resumed[3].rates) == 3
    assert resumed[2].best == straight[2].best  # EarlyStopping's


@pytest.mark.cluster
def test_callbacks_that_change_the_rate_killed_mid_epoch_resume_to_the_same_weights(tmp_path):
    # Killed in the third epoch, where LearningRateScheduler has set the rate twice.
    args = [f"--task={FILES / 'with_callbacks.py'}", "--batch_size=32"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32, after_epochs=2)


@pytest.mark.parametrize(
    ("callback", "says"),
    [
        (keras.callbacks.ModelCheckpoint("/tmp/x.keras"), "ModelCheckpoint, which tf_mgpu does"),
        (keras.callbacks.BackupAndRestore("/tmp/x"), "resumes from --model_dir itself"),
        (keras.callbacks.TensorBoard(), "TensorBoard logs into --model_dir"),
        (keras.callbacks.EarlyStopping(monitor="val_auc"), "monitors 'val_auc', which the logs"),
        ("not a callback", "callbacks\\(\\) returned list; return a list of keras.callbacks"),
        (keras.callbacks.SwapEMAWeights(), "relies on on_test_\\* or on_predict_\\* hooks"),
    ],
    ids=["checkpoint", "backup", "tensorboard", "unknown_monitor", "not_a_callback", "ema"],
)
def test_a_callback_tf_mgpu_would_not_run_as_fit_does_is_one_line(callback, says):
    task = load("with_callbacks")
    task.callbacks = lambda: [callback]
    with pytest.raises(UserError, match=says):
        training.run(Config(epochs=1, jit_compile=False), task, strategy=cpu_strategy(1))


def test_monitoring_a_validation_figure_without_a_validation_split_is_one_line():
    task = load("with_callbacks")
    (x, y), _, test = task.load_data()
    task.load_data = lambda: ((x, y), test)
    with pytest.raises(UserError, match="monitors 'val_loss', but the task has no validation"):
        training.run(Config(epochs=1, jit_compile=False), task, strategy=cpu_strategy(1))


def test_callbacks_that_stop_mid_epoch_end_the_epoch_there():
    class StopAtFirstBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    task = load("with_callbacks")
    task.callbacks = lambda: [StopAtFirstBatch()]
    config = dataclasses.replace(FLOAT64, epochs=3, steps_per_loop=5)
    result = training.run(config, task, strategy=cpu_strategy(2))
    assert result.summary["stopped_by"] == "StopAtFirstBatch"
    assert [r["train_examples"] for r in result.summary["history"]] == [5 * 32]
    assert np.isfinite(result.summary["test_loss"])


@pytest.mark.cluster
def test_two_workers_with_two_heads_a_stateful_metric_and_rate_callbacks_equal_one_device(
    tmp_path,
):
    """MultiWorkerMirroredStrategy, 2 real processes: per-output losses and an AUC state are
    summed over workers, and the callbacks decide on all-reduced logs on both workers."""
    task = str(FILES / "two_heads_callbacks.py")
    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=3, validation_split=0.25)
    last, expected = cluster["history"][-1], one.summary["history"][-1]
    for key in (
        "train_loss",
        "val_loss",
        "val_price_loss",
        "val_high_auc",
        "test_high_auc",
        "test_price_mae",
        "test_loss",
    ):
        assert last[key] == pytest.approx(expected[key], abs=1e-9), key
    rate = float(one.state.optimizer.learning_rate.numpy())
    assert rate < 0.05 * 0.9**2, "the callbacks never changed the rate: this proves nothing"


def test_a_rate_callback_on_a_schedule_is_one_line():
    task = load("adam_decay")
    task.callbacks = lambda: [keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate)]
    with pytest.raises(UserError, match="LearningRateScheduler sets the learning rate, but"):
        training.run(Config(epochs=1, jit_compile=False), task, strategy=cpu_strategy(1))


def test_an_outputs_own_loss_may_be_monitored():
    task = load("two_heads_callbacks")
    stopping = keras.callbacks.EarlyStopping(
        monitor="val_price_loss", mode="min", patience=0, min_delta=9
    )
    task.callbacks = lambda: [stopping]
    config = dataclasses.replace(FLOAT64, epochs=3, validation_split=0.25)
    result = training.run(config, task, strategy=cpu_strategy(1))
    assert result.summary["stopped_by"] == "EarlyStopping"
    assert len(result.summary["history"]) == 2


def test_resuming_with_other_callbacks_is_one_line_and_adding_them_resumes(tmp_path):
    config = dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path))
    plain = load("with_callbacks")
    plain.callbacks = None
    training.run(config, plain, strategy=cpu_strategy(1))  # a run without callbacks
    resumed = training.run(
        dataclasses.replace(config, epochs=2), load("with_callbacks"), strategy=cpu_strategy(1)
    )
    assert len(resumed.summary["history"]) == 2  # resumed, not refused as corrupt
    fewer = load("with_callbacks")
    fewer.callbacks = lambda: load("with_callbacks").callbacks()[:2]
    with pytest.raises(UserError, match="holds the state of the callbacks"):
        training.run(dataclasses.replace(config, epochs=3), fewer, strategy=cpu_strategy(1))


def test_a_run_stopped_mid_epoch_keeps_its_last_record_when_run_again(tmp_path):
    class StopAtFirstBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    task = load("with_callbacks")
    task.callbacks = lambda: [StopAtFirstBatch()]
    config = dataclasses.replace(FLOAT64, epochs=3, steps_per_loop=5, model_dir=str(tmp_path))
    training.run(config, task, strategy=cpu_strategy(1))
    assert training.run(config, task, strategy=cpu_strategy(1)) is None
    assert len(strict(tmp_path / "metrics.jsonl")) == 1
