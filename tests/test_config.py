"""The frozen run configuration."""

import dataclasses

import pytest

from tf_mgpu.config import Config


def test_defaults_are_the_seed_recipe():
    config = Config()
    assert (config.batch_size, config.epochs, config.learning_rate) == (64, 10, 0.01)


def test_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().epochs = 3
