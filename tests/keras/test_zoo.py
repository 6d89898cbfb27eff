"""A zoo of ordinary Keras models, written as keras.io writes them and knowing nothing of
tf_mgpu: a Keras feature that fails turns this red before it reaches a user.

Each trains one epoch on 2 replicas and exports; its `model.keras` reloads with Keras's own
`load_model` (given the file's classes and functions, as a user gives them), and Keras's
`evaluate` of it equals the run's test figures (and `tf_mgpu.evaluate --task` finds a loss
written as a Python function in the task file). Where the model draws no random numbers in
training, keeps no per-replica statistics and reads arrays, its weights also equal Keras `fit`
on one device, on the same examples in the same order, in float64.
"""

import sys

import pytest

from tests import support
from tests.keras.helpers import FIT, ONE_DEVICE, path_of, trained_like_keras

# Its own CI stage with the keras.io zoo (`pytest -m zoo`): minutes of models not ours.
pytestmark = pytest.mark.zoo

# Each model, and what its weights are compared with (see `trained_like_keras`).
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
    result = trained_like_keras(name, tmp_path, ZOO[name])
    if name == "function_loss":  # `evaluate --task` finds the function in the task file
        evaluated = evaluate_command(name, tmp_path)
        assert f"test_loss {result.summary['test_loss']:.4f}" in evaluated, evaluated
