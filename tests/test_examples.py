"""examples/: each runs where it was cloned (its data made up, or read from a path given), or
says in one line what it needs; the quickstart's task trains on 2 replicas as on one device."""

import importlib.util

import numpy as np
import pytest

from tests import support
from tests.keras.helpers import FLOAT64, assert_same_weights, load, one_and_two
from tests.support import ROOT

EXAMPLES = ROOT / "examples"


def example(name: str):
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quickstart_task_learns_and_two_replicas_train_like_one_device():
    one, two = one_and_two(load("quickstart_task"), FLOAT64)
    assert_same_weights(two, one, atol=1e-10)
    assert one.summary["test_accuracy"] > 0.9, one.summary


@pytest.mark.parametrize(
    ("name", "variable", "needs"),
    [
        ("convnet_task", "MNIST_DIR", "set MNIST_DIR to a folder with the four MNIST .gz files"),
        ("synthetic_memmap_task", "SYNTHETIC_DIR", "python -m tf_mgpu.tools.synthetic --out="),
        ("synthetic_tfrecord_task", "SYNTHETIC_DIR", "python -m tf_mgpu.tools.synthetic --out="),
    ],
)
def test_an_example_without_its_data_says_in_one_line_what_it_needs(
    name, variable, needs, tmp_path, monkeypatch
):
    monkeypatch.setenv(variable, str(tmp_path / "absent"))
    with pytest.raises(SystemExit) as ended:
        example(name).load_data()
    said = str(ended.value.code)
    assert needs in said, said
    assert "\n" not in said, said


def test_the_convnet_example_reads_mnist_from_the_folder_given(monkeypatch):
    monkeypatch.setenv("MNIST_DIR", str(support.mnist_manual_dir()))
    monkeypatch.setenv("MNIST_TRAIN", "100")
    monkeypatch.setenv("MNIST_TEST", "10")
    (x, y), (x_test, y_test) = example("convnet_task").load_data()
    assert x.shape == (100, 28, 28, 1)
    assert x.dtype == np.float32
    assert 0 <= x.min() <= x.max() <= 1
    assert y.dtype == np.int64
    assert set(y) <= set(range(10))
    assert len(x_test) == len(y_test) == 10
