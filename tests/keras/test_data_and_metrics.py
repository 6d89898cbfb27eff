"""Stateful metrics, sample and class weights, and a validation split, on replicas and workers."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import (
    FLOAT64,
    assert_same_weights,
    largest_difference,
    load,
    one_and_two,
    path_of,
    strict,
    two_workers_and_one_device,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter


def test_stateful_metrics_are_exact_across_replicas_and_equal_keras_evaluate():
    # 256 test examples over a global batch of 2 x 48: the last batch is padded, and each
    # replica's share holds its own mix of positives, so a mean of the replicas' results
    # (precision of each half) would differ from the result of their summed state.
    task = load("binary_auc")
    config = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
    one, two = one_and_two(task, config)
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = two.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("auc", "precision", "recall", "accuracy", "loss"):
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
        assert two.summary[f"test_{name}"] == pytest.approx(
            one.summary[f"test_{name}"], abs=1e-6
        ), name
    assert 0.0 < two.summary["test_precision"] < 1.0
    held = [getattr(v, "path", v.name) for v in two.state.checkpointed()["train_sums"]]
    assert any("true_positives" in path for path in held), held


@pytest.mark.parametrize(
    "settings",
    [{}, {"input": "stream"}, {"accumulation_steps": 2}],
    ids=["resident", "stream", "accumulated"],
)
def test_sample_and_class_weights_on_two_replicas_equal_one_device(settings):
    task = load("binary_classifier_task")
    config = dataclasses.replace(FLOAT64, **settings)
    one, two = one_and_two(task, config)
    assert_same_weights(one, two, atol=1e-10)
    unweighted = training.run(
        dataclasses.replace(config, batch_size=32),
        load("binary_classifier_task", CLASS_WEIGHT=None),
        strategy=cpu_strategy(1),
    )
    assert largest_difference(one, unweighted) > 1e-2, "the weights changed nothing"


def test_weighted_test_loss_equals_keras_evaluate_and_class_weights_raise_recall():
    config = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
    weighted = training.run(config, load("binary_classifier_task"), strategy=cpu_strategy(2))
    (_, _, _), (x_test, y_test, w_test) = load("binary_classifier_task").load_data()
    keras_says = weighted.state.model.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "auc", "precision", "recall"):
        assert weighted.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    plain = training.run(
        config, load("binary_classifier_task", CLASS_WEIGHT=None), strategy=cpu_strategy(2)
    )
    assert weighted.summary["test_recall"] > plain.summary["test_recall"] + 0.1


@pytest.mark.parametrize(
    ("weights", "said"),
    [
        (lambda n: -np.ones(n), "sample_weight_train holds negative weights"),
        (lambda n: np.ones((n, 2)), r"sample weights have shape \(2,\) per example, but the"),
        (lambda n: np.ones(n + 1), "sample_weight_train has shape"),
        (lambda n: np.full(n, np.nan), "sample_weight_train holds"),
    ],
    ids=["negative", "shape", "rows", "nan"],
)
def test_bad_sample_weights_are_one_line(weights, said):
    module = load("binary_classifier_task")
    (x, y, _), test = module.load_data()
    module.load_data = lambda: ((x, y, weights(len(y))), test)
    with pytest.raises(UserError, match=said):
        training.run(FLOAT64, module, strategy=cpu_strategy(1))


def test_class_weight_missing_a_class_or_on_a_dataset_is_one_line():
    module = load("binary_classifier_task", CLASS_WEIGHT={0: 1.0})
    with pytest.raises(UserError, match="CLASS_WEIGHT has no weight for class 1"):
        adapter.load(module).load_data(Config())
    (x, y, w), test = load("binary_classifier_task").load_data()
    module = load("binary_classifier_task")
    module.load_data = lambda: (tf.data.Dataset.from_tensor_slices((x, y, w)), test)
    with pytest.raises(UserError, match=r"CLASS_WEIGHT applies to arrays, not yet to a tf\.data"):
        adapter.load(module).load_data(Config())


def weighted_datasets():
    """binary_classifier_task.py with its (x, y, sample_weight) splits as tf.data datasets."""
    module = load("binary_classifier_task", CLASS_WEIGHT=None)
    train, test = module.load_data()
    module.load_data = lambda: tuple(
        tf.data.Dataset.from_tensor_slices(split) for split in (train, test)
    )
    return module, test


def test_a_dataset_of_weighted_examples_streams_like_one_device_and_equals_keras_evaluate():
    module, (x_test, y_test, w_test) = weighted_datasets()
    one, two = one_and_two(module, dataclasses.replace(FLOAT64, batch_size=48))
    assert_same_weights(one, two, atol=1e-10)
    keras_says = two.state.model.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "auc", "precision"):
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    unweighted = load("binary_classifier_task", CLASS_WEIGHT=None)
    (x, y, _), _ = unweighted.load_data()
    unweighted.load_data = lambda: (
        tf.data.Dataset.from_tensor_slices((x, y)),
        tf.data.Dataset.from_tensor_slices((x_test, y_test)),
    )
    plain = training.run(
        dataclasses.replace(FLOAT64, batch_size=96), unweighted, strategy=cpu_strategy(1)
    )
    assert largest_difference(one, plain) > 1e-3, "the weights changed nothing"


def test_validation_split_holds_out_the_last_fraction_and_reports_val_every_epoch(tmp_path):
    config = Config(
        batch_size=16,
        epochs=2,
        seed=3,
        jit_compile=False,
        dtype="float64",
        validation_split=0.25,
        model_dir=str(tmp_path),
    )
    result = training.run(config, load("binary_classifier_task"), strategy=cpu_strategy(2))
    (x, y, w), _ = load("binary_classifier_task").load_data()
    kept = int(len(y) * 0.75)  # 256 held out: Keras evaluate under 2 replicas wants even
    keras_says = result.state.model.evaluate(  # sample weights, no class weights: as fit
        x[kept:], y[kept:], sample_weight=w[kept:], batch_size=256, return_dict=True, verbose=0
    )
    assert result.summary["val_examples"] == len(y) - kept
    for name in ("loss", "auc", "precision", "recall"):
        assert result.summary[f"val_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    logged = strict(tmp_path / "metrics.jsonl")
    assert [("val_loss" in r, "val_auc" in r) for r in logged] == [(True, True)] * 2
    assert (tmp_path / "tensorboard" / "validation").is_dir()


def test_load_data_may_return_train_validation_and_test():
    module = load("loss_scale_sgd", LOSS_SCALE=False)
    (x, y), test = module.load_data()
    module.load_data = lambda: ((x[:768], y[:768]), (x[768:], y[768:]), test)
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False, dtype="float64")
    result = training.run(config, module, strategy=cpu_strategy(2))
    keras_says = result.state.model.evaluate(x[768:], y[768:], return_dict=True, verbose=0)
    assert result.summary["val_examples"] == 256
    assert result.summary["val_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
    assert result.summary["val_accuracy"] == pytest.approx(keras_says["accuracy"], abs=1e-6)
    both = dataclasses.replace(config, validation_split=0.1)
    with pytest.raises(UserError, match="returns a validation split and --validation_split"):
        training.run(both, module, strategy=cpu_strategy(1))


@pytest.mark.cluster
def test_two_workers_with_stateful_metrics_weights_and_validation_equal_one_device(tmp_path):
    """MultiWorkerMirroredStrategy, 2 real processes: AUC/Precision/Recall states and the
    validation pass are collectives there; the run must equal one device's."""
    example = str(path_of("binary_classifier_task"))
    cluster, result = two_workers_and_one_device(tmp_path, example, epochs=2, validation_split=0.25)
    one = result.summary
    assert (cluster["num_workers"], cluster["global_batch"]) == (2, 32)
    for key in (
        "val_loss",
        "val_auc",
        "val_precision",
        "test_loss",
        "test_auc",
        "test_recall",
        "train_loss",
    ):
        assert cluster["history"][-1][key] == pytest.approx(one["history"][-1][key], abs=1e-9), key


@pytest.mark.parametrize(
    ("read_as", "said"),
    [
        ("source", "the train source's example 700 holds NaN or inf in x; fix it in the reader"),
        ("dataset", "the train dataset's example 700 holds NaN or inf in x; fix it in load_data()"),
        ("unknown_length", "x_train holds 1 non-finite values (NaN or inf)"),
    ],
)
def test_a_nan_in_a_users_training_split_is_one_line_naming_it(read_as, said):
    # The file docs/data.md runs: a reader with a bug, its split returned three ways.
    with pytest.raises(UserError) as raised:
        training.run(
            Config(epochs=1), load("nan_example", READ_AS=read_as), strategy=cpu_strategy(1)
        )
    assert said in str(raised.value), raised.value


def test_a_dataset_of_unknown_length_is_counted_once_and_the_chief_says_how_to_avoid_it(capsys):
    task = load("nan_example", READ_AS="unknown_length", BAD_EXAMPLE="none")
    result = training.run(Config(epochs=1), task, strategy=cpu_strategy(1))
    assert result.summary["history"][-1]["train_examples"] == 2048
    said = capsys.readouterr().out
    assert "read the train dataset once before training to count its 2,048 examples" in said
    assert "dataset.apply(tf.data.experimental.assert_cardinality(2048))" in said
