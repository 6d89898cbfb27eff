"""Losses of every shape Keras accepts, evaluated as Keras evaluates them: a loss of one value
per pixel, with test splits whose last global batch is padded. Before, the evaluation handed
its padding mask to `compute_loss` as a sample weight of shape (batch,), which Keras lines up
with the loss's last axis: a 28-pixel axis failed to compile, a 32-pixel one at 32 per replica
weighted image columns and reported a wrong test loss."""

import pytest

from tests.keras.helpers import ONE_DEVICE, trained_like_keras


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
