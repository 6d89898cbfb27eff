"""Exports of models whose saving is not plain: a mask (Embedding(mask_zero=True) + LSTM)
and a loss written as a Python function. Each trains on 2 replicas, and its model.keras
reloads with Keras's own load_model and evaluates to the run's test figures; the function
loss also through `tf_mgpu.evaluate --task`, which finds it in the task file."""

import inspect
import sys

import keras
import pytest

from tests import support
from tests.keras.helpers import load, path_of
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config


def own_objects(module) -> dict:
    """What a user hands load_model: the functions and classes their file defines."""
    return {
        name: value
        for name, value in vars(module).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }


@pytest.mark.parametrize(
    ("name", "metric"), [("masked_lstm", "accuracy"), ("function_loss", "mae")]
)
def test_the_export_reloads_in_keras_and_evaluates_to_the_runs_figures(tmp_path, name, metric):
    config = Config(
        task=str(path_of(name)), batch_size=32, epochs=1, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    assert result.summary["exports"][0] == str(tmp_path / "model.keras")
    task = load(name)
    reloaded = keras.saving.load_model(tmp_path / "model.keras", custom_objects=own_objects(task))
    (_, _), (x_test, y_test) = task.load_data()
    says = reloaded.evaluate(x_test, y_test, batch_size=128, return_dict=True, verbose=0)
    assert result.summary["test_loss"] == pytest.approx(says["loss"], abs=1e-5)
    assert result.summary[f"test_{metric}"] == pytest.approx(says[metric], abs=1e-5)
    if name != "function_loss":
        return
    command = [sys.executable, "-m", "tf_mgpu.evaluate", f"--task={path_of(name)}"]
    command.append(f"--model={tmp_path}")
    done = support.run_processes(
        {"evaluate": (command, support.environment())}, tmp_path / "logs", 120
    )["evaluate"]
    assert done.returncode == 0, done.tail()
    assert f"test_loss {result.summary['test_loss']:.4f}" in done.stdout, done.tail()
