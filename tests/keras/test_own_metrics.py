"""Metrics of the user's own (keras.metrics.Metric subclasses as keras.io writes them): one
whose result() returns its state variable, one whose result() computes a tensor, and one
whose state is a largest value (not a sum, so summing the replicas' states is wrong)."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import (
    FLOAT64,
    assert_same_weights,
    load,
    one_and_two,
    path_of,
    trained_like_keras,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.model import metrics

OWN = ("categorical_true_positives", "mean_squared_logit", "largest_loss")


def test_own_metrics_on_two_replicas_equal_one_device_and_keras_evaluate():
    task = load("custom_metric")
    one, two = one_and_two(task)
    assert_same_weights(one, two, atol=1e-10)
    for split in ("train", "test"):
        for name in ("loss", "accuracy", *OWN):
            key = f"{split}_{name}"
            # The metrics' own state is Keras's float32: a sum of squares depends on the
            # order it is added in (5e-7 of 3.7 seen); counts and the float64 sums do not.
            tolerance = 1e-6 if name in ("mean_squared_logit", "largest_loss") else 1e-9
            assert two.summary["history"][-1][key] == pytest.approx(
                one.summary["history"][-1][key], rel=tolerance, abs=1e-9
            ), key
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = on_one_device(task, two).evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "accuracy", *OWN):
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-5), name
    # A count over the whole split, summed over the replicas (not one replica's, nor a mean).
    assert two.summary["test_categorical_true_positives"] > len(y_test) / 2


def test_training_figures_of_own_metrics_equal_keras_on_the_training_arrays():
    # With a rate of 0 the model does not move: an epoch's training figures are Keras
    # evaluate's on the training arrays. 1024 examples are 32 global batches of 2 x 16.
    task = load("custom_metric", LEARNING_RATE=0.0)
    result = training.run(dataclasses.replace(FLOAT64, epochs=1), task, strategy=cpu_strategy(2))
    (x, y), _ = task.load_data()
    keras_says = on_one_device(task, result).evaluate(
        x, y, batch_size=256, return_dict=True, verbose=0
    )
    trained = result.summary["history"][-1]
    for name in OWN:
        assert trained[f"train_{name}"] == pytest.approx(keras_says[name], abs=1e-5), name


def on_one_device(task, result) -> keras.Model:
    """The trained model outside any strategy: Keras's own evaluate under MirroredStrategy
    sums the replicas' states, which is wrong for a largest value (4.63 for 3.06 seen)."""
    model = task.build_model()
    model.set_weights(result.state.model.get_weights())
    return model


def test_the_export_keeps_own_metrics_and_reloads_with_them(tmp_path):
    config = Config(
        task=str(path_of("custom_metric")), batch_size=16, epochs=1, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    assert result.summary["exports"] == [
        str(tmp_path / "model.keras"),
        str(tmp_path / "saved_model"),
    ]
    task = load("custom_metric")
    own = {"CategoricalTruePositives": task.CategoricalTruePositives}
    own["MeanSquaredLogit"] = task.MeanSquaredLogit
    own["LargestLoss"] = task.LargestLoss
    reloaded = keras.saving.load_model(tmp_path / "model.keras", custom_objects=own)
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = reloaded.evaluate(x_test, y_test, batch_size=256, return_dict=True, verbose=0)
    for name in OWN:
        assert result.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-4), name


def test_a_result_that_is_the_state_variable_reads_as_the_sum_over_replicas():
    # What a model's own train_step reports goes through the same reading.
    strategy = cpu_strategy(2)
    task = load("custom_metric")
    with strategy.scope():
        metric = task.CategoricalTruePositives()

    def update():
        metric.update_state(tf.constant([0, 1]), tf.constant(np.eye(3)[:2], tf.float32))

    strategy.run(tf.function(update))
    assert metrics.number(metric.result()) == 4.0  # 2 right on each replica


def test_a_function_metric_over_its_batch_is_measured_on_the_global_batch(tmp_path):
    # Keras averages first_error per batch: on 2 replicas each would score its own share's
    # first example; gathered, the global batch's first, as one device's evaluate.
    trained_like_keras("batch_metric", tmp_path)
    task = load("batch_metric")
    assert not metrics.additive(keras.metrics.MeanMetricWrapper(task.first_error))
    assert metrics.additive(keras.metrics.MeanMetricWrapper(keras.metrics.mean_absolute_error))
