"""Models as users write them: TF objects at import, subclassed models and their exports,
a model's own train_step, compute_loss and test_step, and names a task may not define."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import (
    FILES,
    FLOAT64,
    assert_same_weights,
    kill_mid_epoch_then_resume,
    largest_difference,
    load,
    one_and_two,
    serve,
    strict,
    trained_and_exported,
    trained_like_keras,
)
from tests.support import cpu_strategy
from tests.test_training_tasks import weights
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter


def test_a_task_that_runs_tensorflow_at_import_trains_on_logical_devices(tmp_path):
    done = support.run_main(
        [
            f"--task={FILES / 'tf_object_at_import.py'}",
            "--num_cpu_devices=2",
            "--epochs=1",
            "--batch_size=32",
            f"--model_dir={tmp_path / 'model'}",
        ],
        tmp_path / "logs",
        180,
    )
    assert done.returncode == 0, done.tail()
    assert "replicas=2" in done.stdout, done.tail()


@pytest.mark.parametrize("name", ["subclassed", "text_classifier_task"])
def test_model_keras_and_saved_model_reload_with_the_trained_predictions(name, tmp_path):
    result, x = trained_and_exported(name, tmp_path)
    trained = np.asarray(result.state.model(tf.constant(x), training=False))
    assert result.summary["exports"] == [
        str(tmp_path / "model.keras"),
        str(tmp_path / "saved_model"),
    ]
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(np.asarray(reloaded(tf.constant(x))), trained, atol=1e-6)
    np.testing.assert_allclose(serve(tmp_path, x), trained, atol=1e-6)


def test_a_model_keras_cannot_rebuild_gets_a_saved_model_and_one_line(tmp_path, capsys):
    result, x = trained_and_exported("subclassed_opaque", tmp_path)
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if line.startswith("tf_mgpu export:")]
    assert lines == [
        "tf_mgpu export: Stack cannot be rebuilt from its config (Object Stack was created by "
        "passing non-serializable argument values in `__init__()`, and therefore the object "
        "must override `get_config()` in order to be serializable); wrote saved_model/ and "
        "model.weights.h5 but no model.keras: give the class a get_config() returning its "
        "__init__ arguments to get model.keras"
    ]
    assert not (tmp_path / "model.keras").exists()
    assert result.summary["exports"] == [str(tmp_path / "saved_model")]
    trained = np.asarray(result.state.model(tf.constant(x), training=False))
    np.testing.assert_allclose(serve(tmp_path, x), trained, atol=1e-6)


def test_an_export_that_fails_keeps_checkpoint_and_summary_and_a_rerun_exports(tmp_path):
    broken = tmp_path / "broken.py"
    text = (FILES / "subclassed.py").read_text()
    good = 'return {**super().get_config(), "units": self.units, "classes": self.classes}'
    assert good in text
    broken.write_text(text.replace(good, 'raise RuntimeError("my get_config is broken")'))
    model_dir = tmp_path / "model"
    args = [f"--task={broken}", "--epochs=1", "--batch_size=32", f"--model_dir={model_dir}"]
    failed = support.run_main(args, tmp_path / "logs1", 180)
    assert failed.returncode == 1, failed.tail()
    assert "RuntimeError: my get_config is broken" in failed.stderr  # the user's traceback
    assert "Traceback" in failed.stderr
    (summary,) = strict(model_dir / "summary.json")
    assert summary["exports"] == []
    assert support.checkpoint_steps(model_dir), "the checkpoint is gone"
    broken.write_text(text)  # the user mends get_config and runs the same command again
    again = support.run_main(args, tmp_path / "logs2", 180)
    assert again.returncode == 0, again.tail()
    assert "tf_mgpu export: the last run's export had not finished" in again.stdout
    (summary,) = strict(model_dir / "summary.json")
    assert summary["exports"] == [str(model_dir / "model.keras"), str(model_dir / "saved_model")]
    assert (model_dir / "model.keras").is_file()


def test_a_train_step_adding_nothing_per_replica_on_two_replicas_equals_one_device():
    # PENALTY 0: the step is keras.io's; Keras's compute_loss divides by the replica count.
    one, two = one_and_two(load("own_train_step", PENALTY=0.0))
    assert two.state.own_step
    assert_same_weights(one, two, atol=1e-10)
    assert int(two.state.steps.numpy()) == 2 * (1024 // 32)


def test_the_models_own_train_step_is_what_trains_it_and_the_start_says_so(capsys):
    config = Config(batch_size=16, epochs=2, seed=3, jit_compile=False)
    plain = training.run(config, load("own_train_step", PENALTY=0.0), strategy=cpu_strategy(2))
    capsys.readouterr()
    penalized = training.run(config, load("own_train_step", PENALTY=0.5), strategy=cpu_strategy(2))
    out = capsys.readouterr().out
    assert out.count("tf_mgpu step: Penalized.train_step run on each replica") == 1, out

    def norm(result) -> float:
        return sum(float(np.sum(w**2)) for w in weights(result.state.model))

    assert norm(penalized) < 0.9 * norm(plain), "the penalty in train_step was not applied"
    assert penalized.summary["history"][-1]["train_examples"] == 1024
    assert np.isfinite(penalized.summary["history"][-1]["train_loss"])


def test_check_names_a_train_step_as_what_it_cannot_see_into():
    from tf_mgpu.tools.equivalence import runner

    config = Config(task=str(FILES / "own_train_step.py"), batch_size=8, dtype="float64")
    support.fresh_collective_keys()  # check builds its own MirroredStrategy in this process
    outcome = runner.check(config, 2, 5)
    assert not outcome.equivalent
    assert "likely cause: Penalized.train_step runs on each replica" in outcome.text, outcome.text
    assert "add_loss" not in outcome.text, outcome.text


def test_an_own_compute_loss_trains_and_evaluates_as_keras_does_and_equals_one_device(capsys):
    one, two = one_and_two(load("own_compute_loss"))
    assert "tf_mgpu step: SmallLogits.compute_loss run on each replica" in capsys.readouterr().out
    assert two.state.own_step
    assert two.state.own_eval
    assert_same_weights(one, two, atol=1e-10)
    plain = training.run(FLOAT64, load("own_compute_loss", PENALTY=0.0), strategy=cpu_strategy(2))
    assert largest_difference(two, plain) > 1e-3, "the override never ran: this proves nothing"
    # 256 test examples over 2 x 48: the last global batch is padded.
    config = dataclasses.replace(FLOAT64, batch_size=48)
    result = training.run(config, load("own_compute_loss"), strategy=cpu_strategy(2))
    (_, _), (x_test, y_test) = load("own_compute_loss").load_data()
    # As the float64 run had it (the fixture puts it back): the compute_loss's own
    # MeanSquaredError, made at each call, must add to the compiled float64 loss.
    keras.config.set_floatx("float64")
    keras_says = result.state.model.evaluate(x_test, y_test, return_dict=True, verbose=0)
    for name in ("loss", "accuracy"):
        assert result.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name


def test_an_own_test_step_is_what_evaluates_and_equals_keras_evaluate():
    config = dataclasses.replace(FLOAT64, batch_size=48)
    result = training.run(config, load("own_test_step"), strategy=cpu_strategy(2))
    assert result.state.own_eval
    assert not result.state.own_step
    (_, _), (x_test, y_test) = load("own_test_step").load_data()
    model = result.state.model
    # This step's loss is a mean of batch means (its update_state has no sample_weight), so
    # it depends on the batches: Keras at batch 48 cuts the split as 2 replicas of 48 do.
    keras_says = model.evaluate(x_test, y_test, batch_size=48, return_dict=True, verbose=0)
    unclipped = keras.Model.test_step  # the default step, on the same weights
    model.test_step = lambda data: unclipped(model, data)
    model.test_function = None
    default = model.evaluate(x_test, y_test, batch_size=48, return_dict=True, verbose=0)
    assert abs(keras_says["loss"] - default["loss"]) > 1e-3, "the clipping changed nothing"
    for name in ("loss", "accuracy"):
        assert result.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name


@pytest.mark.cluster
def test_an_own_train_step_killed_mid_epoch_resumes_to_the_same_weights(tmp_path):
    args = [f"--task={FILES / 'own_train_step.py'}", "--batch_size=32"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32)


@pytest.mark.parametrize(
    "name", ["callbacks", "CALLBACKS", "class_weight", "validation_data", "epochs"]
)
def test_a_module_level_name_fit_would_read_is_refused_not_silently_ignored(name):
    module = load("loss_scale_sgd")
    setattr(module, name, [keras.callbacks.EarlyStopping()] if "allback" in name else 5)
    # A list named `callbacks` is not the contract's function callbacks().
    refused = "as list; define a function callbacks()" if name == "callbacks" else "would ignore"
    with pytest.raises(UserError, match=f"defines '{name}'.*{refused}"):
        adapter.load(module)


def test_a_model_given_its_layers_in_init_is_exported_as_keras_saves_it(tmp_path):
    # get_config returns layers: Keras serializes them before from_config reads them.
    trained_like_keras("layers_in_init", tmp_path)
    assert (tmp_path / "model.keras").exists()
