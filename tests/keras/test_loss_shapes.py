"""Losses of every shape Keras accepts, evaluated as Keras evaluates them: a loss of one value
per pixel, with test splits whose last global batch is padded. Before, the evaluation handed
its padding mask to `compute_loss` as a sample weight of shape (batch,), which Keras lines up
with the loss's last axis: a 28-pixel axis failed to compile, a 32-pixel one at 32 per replica
weighted image columns and reported a wrong test loss."""

import dataclasses

import keras
import pytest

from tests.keras.helpers import (
    FLOAT64,
    ONE_DEVICE,
    keras_fit_in_tf_mgpus_order,
    load,
    trained_like_keras,
)
from tests.keras.test_optimizers import largest_difference_to
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.engine.input import data
from tf_mgpu.engine.model import added_losses
from tf_mgpu.engine.step import evaluation


@pytest.mark.parametrize(
    ("name", "batch_size"),
    [("conv_autoencoder", 16), ("unet_segmentation", 32)],
    ids=["per_pixel_28", "per_pixel_32_at_32_per_replica"],
)
def test_a_per_pixel_loss_evaluates_and_trains_as_keras(tmp_path, name, batch_size):
    trained_like_keras(name, tmp_path, batch_size=batch_size)


def test_one_sample_weight_per_token_trains_and_evaluates_as_keras(tmp_path):
    trained_like_keras("token_weights", tmp_path)


def test_an_output_compiled_with_loss_none_takes_no_labels(tmp_path):
    trained_like_keras("loss_none_output", tmp_path)


def test_a_vector_add_loss_is_summed_as_keras_sums_it(tmp_path):
    # Keras fit in float64 sums the added losses into a float32 total: one device instead.
    trained_like_keras("vector_add_loss", tmp_path, ONE_DEVICE)


def test_an_added_loss_of_one_value_per_example_trains_as_keras_on_one_device(
    tmp_path, monkeypatch
):
    # Keras sums an added loss of one value per example (keras.io's CTC layers) and divides
    # the sum among the replicas as a regularizer's: half the gradient on 2 replicas.
    run = trained_like_keras("per_example_add_loss", tmp_path)  # weights, figures == Keras's
    # The evaluate command's scoring of the export, on 2 replicas: the run's figure.
    ((x, _),) = load("per_example_add_loss").load_data()[-1:]
    strategy = cpu_strategy(2)
    with strategy.scope():
        reloaded = keras.saving.load_model(tmp_path / "model.keras")
    split = data.Split(tuple(a.astype("float32") for a in x), ())
    scored = evaluation.evaluate(strategy, reloaded, split, 16)
    assert scored["test_loss"] == pytest.approx(run.summary["test_loss"], rel=1e-5)
    monkeypatch.setattr(added_losses, "per_example", lambda model: [])
    as_keras = training.run(
        dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path / "as_keras")),
        load("per_example_add_loss"),
        strategy=cpu_strategy(2),
    )
    fitted = keras_fit_in_tf_mgpus_order(load("per_example_add_loss"), 1, 32)
    assert largest_difference_to(as_keras, fitted) > 1e-4, "the division never mattered"
