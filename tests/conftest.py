"""Test setup shared by every file: logical CPU devices and real MNIST, prepared once."""

import pytest

from tests.support import NUM_CPU_DEVICES, cpu_strategy, mnist_manual_dir, subset
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine import devices
from tf_mgpu.engine.data import Data
from tf_mgpu.tasks.mnist import data, preflight, serving

# Replicas need devices, and the split must happen before TensorFlow's first
# op, so it happens here, when pytest imports this file, before any test.
devices.split_cpu(NUM_CPU_DEVICES)


@pytest.fixture(scope="session")
def mnist_data_dir(tmp_path_factory) -> str:
    """A TFDS data dir with MNIST prepared from the original files, offline, once."""
    manual_dir = mnist_manual_dir()
    if not all((manual_dir / name).is_file() for name in preflight.MANUAL_FILES):
        pytest.fail(
            f"the MNIST files are not in {manual_dir}: put the four .gz files there "
            f"or set TF_MGPU_MNIST_DIR (these tests never download)"
        )
    data_dir = str(tmp_path_factory.mktemp("tfds"))
    data.load(data_dir, str(manual_dir), "train[:1]", "test[:1]")
    return data_dir


@pytest.fixture(scope="session")
def mnist(mnist_data_dir) -> Data:
    """All of real MNIST, in memory."""
    return data.load(mnist_data_dir, None)


@pytest.fixture(scope="session")
def exported_model_dir(mnist, tmp_path_factory) -> str:
    """A model trained for real (2 epochs on 4,096 examples, about 0.9 accurate) and
    exported with `export.save`, for the tests of evaluate and predict."""
    config = Config(batch_size=32, epochs=2, learning_rate=0.1, seed=0)
    trained = training.run(config, strategy=cpu_strategy(1), datasets=subset(mnist, 4096, 10))
    model_dir = str(tmp_path_factory.mktemp("export"))
    serving.save(trained.state.model, model_dir)
    return model_dir
