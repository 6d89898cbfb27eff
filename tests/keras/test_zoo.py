"""A zoo of ordinary Keras models, written as keras.io writes them and knowing nothing of
tf_mgpu: a Keras feature that fails turns this red before it reaches a user.

Each trains one epoch on 2 replicas and exports; its `model.keras` reloads with Keras's own
`load_model` (given the file's classes and functions, as a user gives them), and Keras's
`evaluate` of it equals the run's test figures (and `tf_mgpu.evaluate --task` finds a loss
written as a Python function in the task file). Where the model draws no random numbers in
training, keeps no per-replica statistics and reads arrays, its weights also equal Keras `fit`
on one device, on the same examples in the same order, in float64.
"""

import dataclasses
import inspect
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import keras_fit_in_tf_mgpus_order, keras_input, load, path_of
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config

# Each model, and what its weights are compared with: Keras fit on one device (FIT), tf_mgpu
# on one device (ONE_DEVICE, where Keras fit cannot run it in float64), or nothing, and why.
FIT, ONE_DEVICE = "fit", "one device"
ZOO = {
    "masked_lstm": FIT,  # text: Embedding(mask_zero=True) and an LSTM
    "gru_regression": FIT,  # a recurrent regression
    "text_classifier_task": FIT,  # TextVectorization adapted in build_model
    "normalization": FIT,  # Normalization adapted in build_model
    "two_inputs_task": "dropout draws other masks on each replica",  # functional, 2 inputs
    "two_heads": FIT,  # two outputs, a loss, a weight and metrics (AUC) each
    "add_loss": ONE_DEVICE,  # an L2 regularizer and a layer's add_loss; Keras fit in float64
    # fails on it (it sums the losses into a float32 total)
    "custom_metric": FIT,  # metrics of the user's own, one of them a largest value
    "function_loss": FIT,  # a loss written as a Python function
    "adamw_ema": FIT,  # the optimizer's moving average of the weights
    "label_smoothing": FIT,  # one-hot labels, CategoricalCrossentropy(label_smoothing=0.1)
    "augmentation": "random augmentation layers draw per replica",
    "batched_dataset": "a tf.data pipeline batched for fit",
    "applications": "BatchNormalization normalises each replica's share",  # MobileNetV3Small
}


def own_objects(module) -> dict:
    """What a user hands load_model: the functions and classes their file defines."""
    return {
        name: value
        for name, value in vars(module).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }


def evaluate_command(name: str, model_dir) -> str:
    """What `python -m tf_mgpu.evaluate --task=... --model=model_dir` prints."""
    command = [sys.executable, "-m", "tf_mgpu.evaluate", f"--task={path_of(name)}"]
    command.append(f"--model={model_dir}")
    done = support.run_processes(
        {"evaluate": (command, support.environment())}, model_dir / "logs", 120
    )["evaluate"]
    assert done.returncode == 0, done.tail()
    return done.stdout


@pytest.mark.parametrize("name", list(ZOO))
def test_a_keras_io_model_trains_exports_reloads_and_matches_keras(tmp_path, name):
    compared = ZOO[name] in (FIT, ONE_DEVICE)
    config = Config(
        task=str(path_of(name)),
        batch_size=16,
        epochs=1,
        seed=3,
        model_dir=str(tmp_path),
        jit_compile=False,
        dtype="float64" if compared else None,
    )
    result = training.run(config, strategy=cpu_strategy(2))
    task = load(name)
    reloaded = keras.saving.load_model(tmp_path / "model.keras", custom_objects=own_objects(task))
    test = task.load_data()[-1]
    names = ("x", "y", "sample_weight")
    if isinstance(test, tf.data.Dataset):
        given = {"x": test}
    else:
        given = dict(zip(names, tf.nest.map_structure(keras_input, test), strict=False))
    says = reloaded.evaluate(**given, return_dict=True, verbose=0)
    figures = {k[len("test_") :]: v for k, v in result.summary.items() if k.startswith("test_")}
    assert set(says) <= set(figures), (says, figures)
    for key, value in says.items():
        assert figures[key] == pytest.approx(value, abs=1e-5), key
    if name == "function_loss":  # `evaluate --task` finds the function in the task file
        evaluated = evaluate_command(name, tmp_path)
        assert f"test_loss {result.summary['test_loss']:.4f}" in evaluated, evaluated
    if ZOO[name] == FIT:
        fitted = keras_fit_in_tf_mgpus_order(task, 1, result.summary["global_batch"])
        other = fitted.weights
    elif ZOO[name] == ONE_DEVICE:
        config = dataclasses.replace(config, batch_size=32, model_dir=str(tmp_path / "one"))
        other = training.run(config, strategy=cpu_strategy(1)).state.model.weights
    else:
        return
    for a, b in zip(result.state.model.weights, other, strict=True):
        # Keras keeps the learning rate and its optimizer's constants in float32: 1e-8 seen.
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, rtol=0, err_msg=a.path)
