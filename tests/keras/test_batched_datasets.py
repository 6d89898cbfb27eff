"""tf.data datasets the user batched, as keras.io batches them for `fit`: read as their
examples at tf_mgpu's global batch, on replicas as on one device, as Keras fit reads them."""

import dataclasses

import keras
import numpy as np
import pytest

from tests.keras.helpers import (
    FLOAT64,
    assert_same_weights,
    built_as_tf_mgpu_builds,
    load,
    one_and_two,
    path_of,
    two_workers_and_one_device,
)
from tests.support import cpu_strategy
from tf_mgpu import training


@pytest.mark.parametrize("drop_remainder", [False, True], ids=["partial_batch", "dropped"])
def test_a_batched_dataset_trains_as_its_examples_on_two_replicas_as_on_one_device(
    drop_remainder, capsys
):
    # A global batch of 40: 25 steps of the 1000 examples, 24 of the 992 in whole batches.
    config = dataclasses.replace(FLOAT64, batch_size=20)
    one, two = one_and_two(load("batched_dataset", DROP_REMAINDER=drop_remainder), config)
    assert_same_weights(one, two, atol=1e-10)
    said = capsys.readouterr().out
    assert "tf_mgpu data: the training and test datasets are batched (by 32" in said, said
    assert "they are unbatched and read at the global batch of 40" in said, said
    # The examples the user's batches hold: a final partial batch of 8 kept, or dropped.
    assert two.summary["steps_per_epoch"] == (24 if drop_remainder else 25)
    assert two.summary["test_examples"] == 250
    # The same examples, unbatched by hand (read once to count them): the same weights.
    by_hand = load("batched_dataset", DROP_REMAINDER=drop_remainder)
    batched = by_hand.load_data
    by_hand.load_data = lambda: tuple(split.unbatch() for split in batched())
    plain = training.run(config, by_hand, strategy=cpu_strategy(2))
    assert plain.summary["weights_sha256"] == two.summary["weights_sha256"]
    assert "unbatched and read at" not in capsys.readouterr().out


def with_validation(**settings):
    """batched_dataset.py whose load_data() also returns its batched test split as the
    validation split: (train, validation, test)."""
    task = load("batched_dataset", **settings)
    splits = task.load_data
    task.load_data = lambda: (splits()[0], splits()[1], splits()[1])
    return task


def test_a_batched_dataset_ends_as_keras_fit_and_evaluate_on_one_device(tmp_path):
    # One batch of 1000 per epoch, the user's and tf_mgpu's (2 replicas x 500): the steps
    # sum the same examples, whatever their order.
    config = dataclasses.replace(FLOAT64, batch_size=500, model_dir=str(tmp_path))
    two = training.run(config, with_validation(BATCH=1000), strategy=cpu_strategy(2))
    task = load("batched_dataset", BATCH=1000)
    train, validation = task.load_data()
    fitted = built_as_tf_mgpu_builds(task)
    initial = [w.numpy() for w in fitted.weights]
    fitted.fit(train, epochs=2, validation_data=validation, shuffle=False, verbose=0)
    # The batched validation split, evaluated every epoch as fit evaluates it.
    for name in ("val_loss", "val_accuracy"):
        keras_says = fitted.history.history[name][-1]
        assert two.summary[name] == pytest.approx(keras_says, abs=1e-6), name
    moved = max(np.abs(w.numpy() - i).max() for w, i in zip(fitted.weights, initial, strict=True))
    assert moved > 1e-2, "training barely moved the weights: the comparison proves nothing"
    # Keras's float32 loss rounds its gradients: 1e-6, far below what a lost example moves.
    for a, b in zip(fitted.weights, two.state.model.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, rtol=0, err_msg=b.path)
    # The user's batched test dataset, with its partial last batch, as Keras evaluates it.
    _, test = load("batched_dataset").load_data()
    exported = keras.saving.load_model(tmp_path / "model.keras")
    for model in (exported, fitted):
        says = model.evaluate(test, return_dict=True, verbose=0)
        assert two.summary["test_loss"] == pytest.approx(says["loss"], abs=1e-6)
        assert two.summary["test_accuracy"] == pytest.approx(says["accuracy"], abs=1e-6)


@pytest.mark.cluster
def test_a_batched_dataset_on_two_real_workers_trains_as_one_device(tmp_path):
    task = str(path_of("batched_dataset"))
    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=2)
    last, expected = cluster["history"][-1], one.summary["history"][-1]
    for key in ("train_loss", "test_loss", "test_accuracy"):
        assert last[key] == pytest.approx(expected[key], abs=1e-9), key
    assert cluster["steps_per_epoch"] == one.summary["steps_per_epoch"] == 1000 // 32
