"""Test setup shared by every file: logical CPU devices and real MNIST, prepared once."""

import pytest

from tests.support import NUM_CPU_DEVICES, mnist_manual_dir
from tf_mgpu import data, devices

# Replicas need devices, and the split must happen before TensorFlow's first
# op, so it happens here, when pytest imports this file, before any test.
devices.split_cpu(NUM_CPU_DEVICES)


@pytest.fixture(scope="session")
def mnist_data_dir(tmp_path_factory) -> str:
    """A TFDS data dir with MNIST prepared from the original files, offline, once."""
    manual_dir = mnist_manual_dir()
    if not all((manual_dir / name).is_file() for name in data.MANUAL_FILES):
        pytest.fail(
            f"the MNIST files are not in {manual_dir}: put the four .gz files there "
            f"or set TF_MGPU_MNIST_DIR (these tests never download)"
        )
    data_dir = str(tmp_path_factory.mktemp("tfds"))
    data.load_mnist(data_dir, str(manual_dir), "train[:1]", "test[:1]")
    return data_dir


@pytest.fixture(scope="session")
def mnist(mnist_data_dir) -> data.Mnist:
    """All of real MNIST, in memory."""
    return data.load_mnist(mnist_data_dir, None)
