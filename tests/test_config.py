"""The frozen run configuration."""

import dataclasses

import pytest

from tf_mgpu.config import STRATEGIES, Config


def test_defaults_are_the_seed_recipe():
    config = Config()
    assert (config.batch_size, config.epochs, config.learning_rate) == (64, 10, 0.01)


def test_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().epochs = 3


def test_rejects_an_unknown_strategy_naming_the_valid_ones():
    with pytest.raises(ValueError, match=", ".join(STRATEGIES)):
        Config(strategy="horovod")
