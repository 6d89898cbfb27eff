"""MNIST loading and the per-replica input pipelines."""

import gzip
import pathlib
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.support import mnist_manual_dir
from tf_mgpu import errors
from tf_mgpu.engine.input import data
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import mnist_mlp
from tf_mgpu.tasks.mnist import data as mnist_data
from tf_mgpu.tasks.mnist import preflight


def original_labels(name: str) -> np.ndarray:
    """Labels read straight from an original MNIST file (8-byte header, then one byte each)."""
    with gzip.open(mnist_manual_dir() / name) as f:
        return np.frombuffer(f.read()[8:], np.uint8)


def test_real_mnist_loads_whole_with_pixels_and_labels_intact(mnist):
    assert mnist.train.x.shape == (60000, 28, 28)
    assert mnist.test.x.shape == (10000, 28, 28)
    assert mnist.train.x.dtype == np.uint8
    assert mnist.train.x.max() == 255
    # TFDS stores the examples in its own order, so compare how many of each digit.
    for split, name in [
        (mnist.train, "train-labels-idx1-ubyte.gz"),
        (mnist.test, "t10k-labels-idx1-ubyte.gz"),
    ]:
        expected = np.bincount(original_labels(name), minlength=10)
        np.testing.assert_array_equal(np.bincount(split.y, minlength=10), expected, name)


def test_split_slices_are_tfds_splits(mnist_data_dir):
    part = mnist_data.load(mnist_data_dir, None, "train[:1000]", "test[10%:20%]")
    assert (len(part.train), len(part.test)) == (1000, 1000)


def test_missing_manual_files_name_the_files(tmp_path):
    (tmp_path / preflight.MANUAL_FILES[0]).write_bytes(b"")
    with pytest.raises(UserError, match=r"lacks train-labels-idx1-ubyte\.gz, t10k-images") as e:
        mnist_data.load(str(tmp_path / "tfds"), str(tmp_path))
    assert "\n" not in str(e.value)


def test_unpreparable_data_dir_is_a_user_error(tmp_path):
    # TFDS cannot prepare into a data_dir that is a file, even from the right files.
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    with pytest.raises(UserError, match=r"could not prepare MNIST.*--data_dir is writable"):
        mnist_data.load(str(blocker), str(mnist_manual_dir()))


def test_a_corrupt_manual_file_is_a_user_error(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    for name in preflight.MANUAL_FILES:
        (manual / name).symlink_to(mnist_manual_dir() / name)
    (manual / preflight.MANUAL_FILES[1]).unlink()
    (manual / preflight.MANUAL_FILES[1]).write_bytes(b"not the MNIST labels")
    with pytest.raises(UserError, match=r"could not prepare MNIST.*uncorrupted"):
        mnist_data.load(str(tmp_path / "tfds"), str(manual))


def test_bad_split_is_a_user_error(mnist_data_dir):
    with pytest.raises(UserError, match=r"--train_split=train\[:abc\]"):
        mnist_data.load(mnist_data_dir, None, train_split="train[:abc]")


def test_fewer_examples_than_a_global_batch_names_both_numbers():
    with pytest.raises(UserError, match="has 100 examples, fewer than one global batch of 128"):
        data.steps_per_epoch(100, 128)


def test_epoch_order_is_a_permutation_fixed_by_seed_and_epoch():
    order = data.epoch_order(1000, seed=7, epoch=3).numpy()
    assert sorted(order) == list(range(1000))
    np.testing.assert_array_equal(order, data.epoch_order(1000, seed=7, epoch=3).numpy())
    assert not np.array_equal(order, data.epoch_order(1000, seed=7, epoch=4).numpy())
    assert not np.array_equal(order, data.epoch_order(1000, seed=8, epoch=3).numpy())


def numbered(size: int) -> data.Split:
    """A split whose label is each example's index, so batches show which examples they hold."""
    return data.Split(x=np.zeros((size, 28, 28), np.uint8), y=np.arange(size))


def pipeline_batches(make_dataset, pipelines: int, replicas_per_pipeline: int) -> list[list]:
    """Every pipeline's batches, as a replica of MirroredStrategy or MWMS would get them."""
    return [
        list(
            make_dataset(
                tf.distribute.InputContext(pipelines, i, pipelines * replicas_per_pipeline)
            ).as_numpy_iterator()
        )
        for i in range(pipelines)
    ]


LAYOUTS = [(1, 1), (1, 4), (2, 1), (3, 1), (2, 2)]  # (input pipelines, replicas per pipeline)


@pytest.mark.parametrize(("pipelines", "per_pipeline"), LAYOUTS)
@pytest.mark.parametrize("size", [1000, 997])
def test_each_step_trains_on_one_slice_of_the_epoch_order(pipelines, per_pipeline, size):
    per_replica, epochs = 16, 2
    global_batch = per_replica * pipelines * per_pipeline
    steps = data.steps_per_epoch(size, global_batch)
    batches = pipeline_batches(
        lambda context: data.train_dataset(numbered(size), global_batch, 5, epochs, context),
        pipelines,
        per_pipeline,
    )
    for pipeline in batches:
        assert len(pipeline) == epochs * steps * per_pipeline, "steps differ between pipelines"
    for epoch in range(epochs):
        order = data.epoch_order(size, 5, epoch).numpy()
        for step in range(steps):
            at = (epoch * steps + step) * per_pipeline
            labels = [b[1] for p in batches for b in p[at : at + per_pipeline]]
            assert all(len(x) == per_replica for x in labels), "a replica got a partial batch"
            expected = order[step * global_batch : (step + 1) * global_batch]
            assert sorted(np.concatenate(labels)) == sorted(expected), (epoch, step)


@pytest.mark.parametrize(("pipelines", "per_pipeline"), LAYOUTS)
def test_evaluation_sees_every_example_once_per_pass(pipelines, per_pipeline):
    size, per_replica = 997, 16
    global_batch = per_replica * pipelines * per_pipeline
    steps = data.eval_steps(size, global_batch)
    batches = pipeline_batches(
        lambda context: data.eval_dataset(numbered(size), global_batch, context).take(
            2 * steps * per_pipeline
        ),
        pipelines,
        per_pipeline,
    )
    for first_pass in (slice(None, steps * per_pipeline), slice(steps * per_pipeline, None)):
        seen = [
            (label, weight)
            for pipeline in batches
            for _, labels, weights in pipeline[first_pass]
            for label, weight in zip(labels, weights, strict=True)
        ]
        real = sorted(label for label, weight in seen if weight == 1)
        assert real == list(range(size)), "an example was skipped or seen twice"
        assert len(seen) == steps * global_batch, "replicas ran different numbers of steps"


def test_a_later_first_epoch_starts_with_that_epochs_order():
    size, global_batch = 100, 10
    context = tf.distribute.InputContext(1, 0, 1)
    dataset = data.train_dataset(numbered(size), global_batch, 5, 3, context, first_epoch=2)
    batches = [labels for _, labels in dataset.as_numpy_iterator()]
    assert len(batches) == size // global_batch, "epochs 0 and 1 were not skipped"
    np.testing.assert_array_equal(np.concatenate(batches), data.epoch_order(size, 5, 2).numpy())


def test_pixels_are_scaled_to_the_unit_interval(mnist):
    context = tf.distribute.InputContext(1, 0, 1)
    images, _ = next(
        iter(data.train_dataset(mnist.train, 64, 0, 1, context, preprocess=mnist_mlp.preprocess))
    )
    assert images.dtype == tf.float32
    assert float(tf.reduce_min(images)) >= 0.0
    assert float(tf.reduce_max(images)) == 1.0


def offline(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Runs `command` in a network namespace of its own: loopback only, like a machine
    cut off from the internet (`unshare -rn`, no root needed)."""
    return subprocess.run(
        ["unshare", "-rn", *command],
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_offline_without_the_files_fails_fast_naming_the_fix(tmp_path):
    started = time.monotonic()
    done = offline(
        support.main_command(f"--data_dir={tmp_path / 'tfds'}", f"--model_dir={tmp_path / 'm'}"),
        timeout=120,
    )
    seconds = time.monotonic() - started
    lines = [line for line in done.stderr.splitlines() if line.startswith("tf_mgpu:")]
    assert done.returncode == errors.EXIT_USER_ERROR, done.stderr[-2000:]
    assert len(lines) == 1, done.stderr[-2000:]
    assert "cannot be reached" in lines[0], lines
    assert "--manual_dir=DIR" in lines[0], lines
    assert str(tmp_path / "tfds" / "downloads" / "manual") in lines[0], lines
    assert seconds < 15, f"took {seconds:.1f} s to report being offline (the issue allows 15)"


def test_offline_workers_sharing_a_fresh_data_dir_all_get_the_data_from_tfds_manual_folder(
    mnist_preparation,
):
    # The session's own preparation (tests/conftest.py): two workers on one machine,
    # one fresh TFDS data dir, both preparing at once, offline, from the original
    # files in TFDS's default manual folder (no --manual_dir).
    data_dir, finished = mnist_preparation
    assert len(finished) == 2
    for f in finished.values():
        assert f.returncode == 0, f.tail()
        assert f.stdout.strip().splitlines()[-1] == "loaded 100 10", f.tail()
    assert (pathlib.Path(data_dir) / "mnist").is_dir()
