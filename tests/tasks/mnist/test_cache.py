"""The MNIST array cache: TFDS's own examples, read once, rebuilt when it does not match."""

import os
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tf_mgpu.tasks.mnist import cache
from tf_mgpu.tasks.mnist import data as mnist_data

SPECS = ["test", "train[:1000]", "test[10%:20%]", "train[-7:]", "test[-1%:]", "train[-7:]+test[:5]"]


@pytest.mark.parametrize("spec", SPECS)
def test_cached_splits_are_the_examples_tfds_reads(mnist_data_dir, spec):
    loaded = mnist_data.load(mnist_data_dir, None, spec, "test[:1]")
    builder = tfds.builder("mnist", data_dir=mnist_data_dir)
    assert os.path.isfile(cache.path(builder))
    direct = tfds.as_numpy(builder.as_dataset(split=spec, batch_size=-1))
    np.testing.assert_array_equal(loaded.train.x, direct["image"][..., 0])
    np.testing.assert_array_equal(loaded.train.y, direct["label"])


@pytest.fixture
def data_dir(mnist_data_dir, tmp_path) -> str:
    """A copy of the prepared TFDS data, without the cache."""
    copy = tmp_path / "tfds"
    shutil.copytree(os.path.join(mnist_data_dir, "mnist"), copy / "mnist")
    return str(copy)


def test_a_second_load_reads_the_cache_alone_and_a_mismatch_is_rebuilt(data_dir, monkeypatch):
    first = mnist_data.load(data_dir, None, "train[:100]", "test[:100]")
    read_whole = mnist_data._read_whole

    def no_tfds(*args):
        raise AssertionError("read TFDS although the cache matches")

    monkeypatch.setattr(mnist_data, "_read_whole", no_tfds)
    with monkeypatch.context() as patch:  # common split strings need no TFDS builder at all
        patch.setattr(tfds, "builder", no_tfds)
        second = mnist_data.load(data_dir, None, "train[:100]", "test[:100]")
    np.testing.assert_array_equal(second.train.x, first.train.x)
    np.testing.assert_array_equal(second.test.y, first.test.y)
    assert cache.select_simple(cache.read(tfds.builder("mnist", data_dir=data_dir)), "a+b") is None

    builder = tfds.builder("mnist", data_dir=data_dir)
    path = pathlib.Path(cache.path(builder))
    blob = bytearray(path.read_bytes())
    blob[-200] ^= 1  # a flipped bit: the file still loads as an npz
    path.write_bytes(bytes(blob))
    assert cache.read(builder) is None
    monkeypatch.setattr(mnist_data, "_read_whole", read_whole)
    again = mnist_data.load(data_dir, None, "train[:100]", "test[:100]")
    np.testing.assert_array_equal(again.train.x, first.train.x)
    assert cache.read(builder) is not None

    # TFDS prepared again: its files changed, so the cache no longer matches them.
    os.utime(os.path.join(builder.data_dir, "dataset_info.json"), ns=(1, 1))
    assert cache.read(builder) is None
