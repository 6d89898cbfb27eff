"""The benchmark's reference loops: the seed's data as torchvision gives it; each loop trains."""

import numpy as np
import pytest

from tests.support import ROOT, fresh_collective_keys, mnist_manual_dir
from tf_mgpu.errors import UserError
from tf_mgpu.tools.benchmarks import baselines

SIZES = {"train": 60_000, "test": 10_000}
SLICE = {"train_split": "train[:2048]", "test_split": "test[:500]"}


def require_torch():
    """torch, or a failure that says how to install it (these tests must not skip quietly)."""
    try:
        import torch
    except ImportError:
        pytest.fail("torch is missing: install the bench extra, pip install -e '.[test,bench]'")
    return torch


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("train", ("train", slice(None, None))),
        ("test[:1000]", ("test", slice(None, 1000))),
        ("train[10%:-5]", ("train", slice(6000, -5))),
        ("test[25:]", ("test", slice(25, None))),
    ],
)
def test_split_slice_reads_tfds_slices(spec, expected):
    assert baselines.split_slice(spec, SIZES) == expected


@pytest.mark.parametrize("spec", ["validation", "train[:10", "train[a:b]", "train+test"])
def test_split_slice_rejects_other_forms_naming_them(spec):
    with pytest.raises(UserError, match=r"not understood"):
        baselines.split_slice(spec, SIZES)


def test_idx_files_hold_the_same_examples_as_tfds(mnist):
    images, labels = baselines.read_idx(str(mnist_manual_dir()), "train")
    assert images.shape == (60_000, 28, 28), images.shape
    assert images.dtype == np.uint8, images.dtype
    # TFDS stores its own order: compare per-digit counts and sorted pixel sums.
    np.testing.assert_array_equal(np.bincount(labels), np.bincount(mnist.train.y))
    np.testing.assert_array_equal(
        np.sort(images.reshape(len(images), -1).sum(axis=1)),
        np.sort(mnist.train.x.reshape(len(images), -1).sum(axis=1)),
    )


def test_a_slice_is_that_slice_of_the_files_order():
    manual_dir = str(mnist_manual_dir())
    images, labels = baselines.read_idx(manual_dir, "test")
    some_images, some_labels = baselines.read_idx(manual_dir, "test[100:300]")
    np.testing.assert_array_equal(some_images, images[100:300])
    np.testing.assert_array_equal(some_labels, labels[100:300])


@pytest.mark.bench
def test_torch_items_are_what_torchvision_mnist_with_totensor_gives():
    torch = require_torch()
    images, labels = baselines.read_idx(str(mnist_manual_dir()), "train[:3]")
    image, label = baselines.torch_dataset(images, labels)[2]
    assert image.dtype == torch.float32, image.dtype
    assert tuple(image.shape) == (1, 28, 28), image.shape
    np.testing.assert_allclose(image.numpy()[0], images[2] / 255.0, rtol=1e-6)
    assert type(label) is int, type(label)
    assert label == labels[2]


def check_result(result: dict, epochs: int, examples: int) -> None:
    assert len(result["epoch_seconds"]) == epochs, result
    assert all(seconds > 0 for seconds in result["epoch_seconds"]), result
    assert result["train_examples_per_epoch"] == examples, result
    assert result["peak_memory_mib"] > 50, result
    # 64 steps at lr 0.01: above chance (0.1), far below converged.
    assert 0.2 < result["test_accuracy"] < 0.95, result


@pytest.mark.harness
@pytest.mark.bench
def test_seed_torch_trains_on_a_slice():
    require_torch()
    result = baselines.seed_torch(str(mnist_manual_dir()), epochs=2, **SLICE)
    check_result(result, epochs=2, examples=2048)


@pytest.mark.harness
def test_keras_fit_trains_on_a_slice(mnist_data_dir):
    # pytest's process already built MirroredStrategies (see support.fresh_collective_keys).
    fresh_collective_keys()
    result = baselines.keras_fit(mnist_data_dir, None, epochs=2, **SLICE)
    check_result(result, epochs=2, examples=2048)


@pytest.mark.harness
@pytest.mark.parametrize("name", ["keras_fit_task", "task_floor"])
def test_fit_and_the_floor_of_any_task_train_and_evaluate_it_as_compiled(name):
    task = str(ROOT / "examples" / "two_inputs_task.py")
    result = baselines.run(
        name,
        manual_dir="/unused",
        data_dir=None,
        epochs=2,
        train_split="train",
        test_split="test",
        task=task,
    )
    check_result(result, epochs=2, examples=2048)
    assert result["test_accuracy"] > 0.5, result  # 3 classes: chance is 1/3


def test_xla_floor_trains_on_whole_batches_of_a_slice(mnist_data_dir):
    result = baselines.xla_floor(
        mnist_data_dir, None, epochs=2, train_split="train[:4000]", test_split="test[:500]"
    )
    check_result(result, epochs=2, examples=62 * 64)


def test_result_line_round_trips():
    result = {"epoch_seconds": [1.5], "test_accuracy": 0.9}
    output = f"some log\n{baselines.result_line(result)}\nmore log\n"
    assert baselines.parse_result(output) == result
    with pytest.raises(ValueError, match="no line"):
        baselines.parse_result("some log\n")


def test_unknown_reference_is_a_user_error():
    with pytest.raises(UserError, match="seed_torch, keras_fit, xla_floor"):
        baselines.run(
            "horovod", manual_dir="", data_dir=None, epochs=1, train_split="", test_split=""
        )
