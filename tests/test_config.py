"""The frozen run configuration."""

import dataclasses

import pytest

from tf_mgpu.config import Config


def test_defaults_are_the_seed_recipe():
    config = Config()
    # The rate is mnist_mlp's compiled one (SGD at 0.01) unless --learning_rate is given.
    assert (config.task, config.batch_size, config.epochs) == ("mnist_mlp", 64, 10)
    assert config.learning_rate is None


def test_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().epochs = 3
