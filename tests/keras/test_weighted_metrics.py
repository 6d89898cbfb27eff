"""compile(weighted_metrics=...): updated with the sample weights (and in training the class
weights), named as Keras names them, exact over replicas and a padded last batch."""

import dataclasses
import sys

import keras
import numpy as np
import pytest

from tests import support
from tests.keras.helpers import FLOAT64, assert_same_weights, load, one_and_two, path_of
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError

# 256 test examples over a global batch of 2 x 48: the last batch is padded.
PADDED = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
NAMES = {"loss", "auc", "accuracy", "weighted_auc", "weighted_accuracy", "mae"}


def figures(summary: dict, split: str = "test") -> dict:
    prefix = f"{split}_"
    return {
        key.removeprefix(prefix): value
        for key, value in summary.items()
        if key.startswith(prefix) and key != f"{split}_examples"
    }


def assert_as_keras(ours: dict, keras_says: dict) -> None:
    assert set(ours) == set(keras_says), (sorted(ours), sorted(keras_says))
    for name, value in keras_says.items():
        assert ours[name] == pytest.approx(value, abs=1e-6), name


def test_weighted_and_unweighted_metrics_equal_keras_evaluate_on_two_replicas():
    task = load("weighted_metrics")
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _, _), (x_test, y_test, w_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    assert set(keras_says) == NAMES
    assert_as_keras(figures(result.summary), keras_says)
    # The weights matter here: a test that ignored them could not pass.
    test = figures(result.summary)
    assert abs(test["weighted_accuracy"] - test["accuracy"]) > 0.01, test
    assert abs(test["weighted_auc"] - test["auc"]) > 5e-4, test


@pytest.mark.parametrize(
    "settings",
    [{}, {"input": "stream"}, {"accumulation_steps": 2}],
    ids=["resident", "stream", "accumulated"],
)
def test_weighted_metrics_on_two_replicas_equal_one_device(settings):
    one, two = one_and_two(load("weighted_metrics"), dataclasses.replace(FLOAT64, **settings))
    assert_same_weights(one, two, atol=1e-10)
    for split in ("train", "test"):
        for name in NAMES:
            key = f"{split}_{name}"
            # AUC keeps Keras's float32 state: with weights that are not whole numbers its
            # sums depend on the order they are added in (6e-8 seen); the means are float64.
            tolerance = 1e-6 if name == "weighted_auc" else 1e-9
            assert two.summary["history"][-1][key] == pytest.approx(
                one.summary["history"][-1][key], abs=tolerance
            ), key


def test_training_weights_them_by_sample_and_class_weights_as_fit():
    # With a rate of 0 the model does not move, so an epoch's training figures are those
    # of Keras evaluate on the training arrays, weighted as fit weights them: sample
    # weights times class weights. 1024 examples are 32 global batches of 2 x 16.
    task = load("weighted_metrics", LEARNING_RATE=0.0)
    config = dataclasses.replace(FLOAT64, epochs=1)
    result = training.run(config, task, strategy=cpu_strategy(2))
    (x, y, w), _ = task.load_data()
    assert result.summary["history"][-1]["train_examples"] == len(y)
    class_weights = np.where(y == 1, task.CLASS_WEIGHT[1], task.CLASS_WEIGHT[0])
    keras_says = result.state.model.evaluate(
        x, y, sample_weight=w * class_weights, batch_size=256, return_dict=True, verbose=0
    )
    assert_as_keras(figures(result.summary["history"][-1], "train"), keras_says)


def test_without_sample_weights_weighted_metrics_equal_unweighted_ones():
    task = load("weighted_metrics", CLASS_WEIGHT=None)
    given = task.load_data
    task.load_data = lambda: tuple(split[:2] for split in given())
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    assert_as_keras(figures(result.summary), keras_says)
    test = figures(result.summary)
    assert test["weighted_auc"] == pytest.approx(test["auc"], abs=1e-12)
    assert test["weighted_accuracy"] == pytest.approx(test["accuracy"], abs=1e-12)


def test_the_export_keeps_them_and_the_evaluate_command_reports_them(tmp_path):
    task = str(path_of("weighted_metrics"))
    config = Config(task=task, batch_size=48, epochs=2, seed=3, model_dir=str(tmp_path))
    result = training.run(config, strategy=cpu_strategy(2))
    (_, _, _), (x_test, y_test, w_test) = load("weighted_metrics").load_data()
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    keras_says = reloaded.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    assert set(keras_says) == NAMES
    for name, value in keras_says.items():
        assert result.summary[f"test_{name}"] == pytest.approx(value, abs=1e-5), name
    command = [
        sys.executable,
        "-m",
        "tf_mgpu.evaluate",
        f"--task={task}",
        f"--model={tmp_path}",
        "--strategy=mirrored",
        "--num_cpu_devices=2",
        "--batch_size=48",
    ]
    finished = support.run_processes(
        {"evaluate": (command, support.environment())}, tmp_path / "logs", timeout=120
    )["evaluate"]
    assert finished.returncode == 0, finished.tail()
    (line,) = [s for s in finished.stdout.splitlines() if s.startswith("tf_mgpu evaluate:")]
    for name in sorted(NAMES):
        shown = "acc" if name == "accuracy" else name
        assert f"test_{shown} {result.summary[f'test_{name}']:.4f}" in line, (name, line)


def two_heads_weighted(**compile_args):
    """two_heads with one sample weight per example (list labels: Keras's evaluate takes
    one weight array for dict labels as a per-output structure and fails) and its compile
    changed."""
    task = load("two_heads")
    given, build = task.load_data, task.build_model

    def load_data():
        (x, y), (x_test, y_test) = given()
        x_all = np.concatenate([x, x_test])
        w = np.random.default_rng(1).uniform(0.1, 1.0, size=len(x_all))
        w = (w * np.where(x_all[:, 0] > 0, 4.0, 1.0)).astype("float32")
        n = len(x)
        return (x, [y["price"], y["sold"]], w[:n]), (
            x_test,
            [y_test["price"], y_test["sold"]],
            w[n:],
        )

    def build_model():
        model = build()
        model.compile(
            optimizer=keras.optimizers.SGD(0.1),
            loss={"price": "mse", "sold": "binary_crossentropy"},
            loss_weights={"price": 0.25, "sold": 1.0},
            **compile_args,
        )
        return model

    task.load_data, task.build_model = load_data, build_model
    return task


@pytest.mark.parametrize(
    "weighted",
    [{"price": ["mae", "mse"], "sold": ["auc"]}, [["mae", "mse"], ["auc"]]],
    ids=["dict", "list"],
)
def test_weighted_metrics_per_output_equal_keras_evaluate(weighted):
    task = two_heads_weighted(
        metrics={"price": ["mae"], "sold": ["auc", "accuracy"]}, weighted_metrics=weighted
    )
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _, _), (x_test, y_test, w_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    assert {"price_weighted_mae", "price_mse", "sold_weighted_auc"} <= set(keras_says)
    assert_as_keras(figures(result.summary), keras_says)


def test_per_output_weighted_metrics_for_one_output_are_one_line():
    task = load("weighted_metrics")
    build = task.build_model

    def build_model():
        model = build()
        model.compile(optimizer="sgd", loss="binary_crossentropy", weighted_metrics=[["auc"]])
        return model

    task.build_model = build_model
    with pytest.raises(UserError, match=r"weighted_metrics per output are given for a model"):
        training.run(FLOAT64, task, strategy=cpu_strategy(1))
