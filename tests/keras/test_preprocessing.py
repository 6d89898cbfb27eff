"""A preprocessing layer adapted in build_model: keras.layers.Normalization, whose count is an
int64 weight beside its float mean and variance."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import assert_same_weights, load, one_and_two, path_of, serve
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config


def normalization(model: keras.Model) -> keras.layers.Normalization:
    (found,) = [layer for layer in model.layers if isinstance(layer, keras.layers.Normalization)]
    return found


def assert_adapted_to(layer: keras.layers.Normalization, x: np.ndarray) -> None:
    """The layer holds what Keras's own adapt() on `x` gives (mean, variance, and the int64
    count, which Keras 3 leaves at 0): training, checkpoints and the export kept them."""
    fresh = keras.layers.Normalization()
    fresh.adapt(x)
    assert [w.dtype for w in layer.weights][-1] == "int64"
    for held, adapted in zip(layer.weights, fresh.weights, strict=True):
        np.testing.assert_allclose(np.asarray(held), np.asarray(adapted), rtol=1e-5)


def test_an_adapted_normalization_on_two_replicas_equals_one_device_and_keras_evaluate():
    task = load("normalization")
    one, two = one_and_two(task)
    assert_same_weights(one, two, atol=1e-10)
    (x, _), (x_test, y_test) = task.load_data()
    for result in (one, two):
        assert_adapted_to(normalization(result.state.model), x)
        for split in ("train", "test"):
            for name in ("loss", "accuracy"):
                key = f"{split}_{name}"
                assert two.summary["history"][-1][key] == pytest.approx(
                    one.summary["history"][-1][key], abs=1e-9
                ), key
    keras_says = two.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "accuracy"):
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    assert two.summary["test_accuracy"] > 0.6  # the layer matters: features span 0.5 to 20


def test_it_checkpoints_resumes_and_exports_with_its_statistics(tmp_path):
    config = Config(
        task=str(path_of("normalization")),
        batch_size=16,
        epochs=2,
        seed=3,
        jit_compile=False,
        model_dir=str(tmp_path / "whole"),
    )
    whole = training.run(config, strategy=cpu_strategy(2))
    halves = dataclasses.replace(config, model_dir=str(tmp_path / "halves"))
    training.run(dataclasses.replace(halves, epochs=1), strategy=cpu_strategy(2))
    resumed = training.run(halves, strategy=cpu_strategy(2))  # from the epoch-1 checkpoint
    assert_same_weights(whole, resumed, atol=0)
    (x, _), (x_test, _) = load("normalization").load_data()
    trained = np.asarray(whole.state.model(tf.constant(x_test), training=False))
    reloaded = keras.saving.load_model(tmp_path / "whole" / "model.keras")
    assert_adapted_to(normalization(reloaded), x)
    np.testing.assert_allclose(np.asarray(reloaded(tf.constant(x_test))), trained, atol=1e-5)
    np.testing.assert_allclose(serve(tmp_path / "whole", x_test), trained, atol=1e-5)
