"""The run's settings as one frozen value, built once from flags by `tf_mgpu.main`."""

import dataclasses

STRATEGIES = ("mirrored", "multi_worker_mirrored", "one_device", "default")


@dataclasses.dataclass(frozen=True)
class Config:
    """Hyperparameters and paths of one training run.

    Values that depend on the runtime (replica count, global batch, steps per
    epoch) are not stored here: `tf_mgpu.train.run` derives them once the
    strategy exists.
    """

    strategy: str = "mirrored"
    batch_size: int = 64  # per replica; global batch = batch_size * replicas in sync
    epochs: int = 10
    learning_rate: float = 0.01
    seed: int = 0
    data_dir: str | None = None  # None: TFDS's default data dir
    manual_dir: str | None = None  # folder holding the four MNIST .gz files
    model_dir: str | None = None  # None: write nothing
    train_split: str = "train"
    test_split: str = "test"
    num_cpu_devices: int = 1
    startup_timeout: float = 300.0  # seconds a worker waits for its peers
