"""Checks of the user's inputs that need no TensorFlow, made before it loads.

Importing TensorFlow takes about 6 s; a typo in --model_dir, --manual_dir or
TF_CONFIG should not. `tf_mgpu.main` runs these first (TF_CONFIG itself is
checked by `tf_mgpu.cluster.tf_config`), and the library runs them again for callers
that skip main. Nothing here imports TensorFlow.
"""

import glob
import os
import socket
import threading

from tf_mgpu.cluster import tf_config
from tf_mgpu.config import STRATEGIES
from tf_mgpu.errors import UserError

MANUAL_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def model_dir(path: str | None) -> None:
    """Creates `path` and checks it is a writable folder; None means write nothing."""
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--model_dir={path} is a file; choose a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(
            f"--model_dir={path} cannot be created ({e.strerror}); choose a folder you can write to"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--model_dir={path} is not writable; choose a folder you can write to")


def manual_dir(path: str | None) -> None:
    """Raises UserError unless `path` is None or holds the four MNIST files."""
    if path is None:
        return
    missing = [f for f in MANUAL_FILES if not os.path.isfile(os.path.join(path, f))]
    if missing:
        raise UserError(
            f"--manual_dir={path} lacks {', '.join(missing)}; point it at the "
            f"folder holding the four original MNIST .gz files"
        )


def has_manual_files(path: str) -> bool:
    return all(os.path.isfile(os.path.join(path, f)) for f in MANUAL_FILES)


# Where TFDS's mnist builder downloads from (tensorflow_datasets/image_classification/mnist.py).
DOWNLOAD_HOST = "storage.googleapis.com"
# A host that cannot be reached within this many seconds means we are offline.
PROBE_SECONDS = 5.0


def tfds_data_dir(data_dir: str | None) -> str:
    """The data dir TFDS will use: --data_dir, else $TFDS_DATA_DIR, else ~/tensorflow_datasets."""
    if data_dir:
        return data_dir
    return os.environ.get(
        "TFDS_DATA_DIR", os.path.join(os.path.expanduser("~"), "tensorflow_datasets")
    )


def default_manual_dir(data_dir: str) -> str:
    """TFDS's own place for files fetched by hand: `<data_dir>/downloads/manual`."""
    return os.path.join(data_dir, "downloads", "manual")


def data(data_dir: str | None, manual: str | None) -> None:
    """Fails in seconds, not after minutes of download retries, when MNIST cannot be had.

    MNIST can be had when it is prepared in the data dir (TFDS's layout:
    `<data_dir>/mnist/<version>/dataset_info.json`), when the four files are
    in --manual_dir or in TFDS's manual folder, or when the download host
    answers. `tf_mgpu.data` checks the same again with TFDS itself.
    """
    manual_dir(manual)
    folder = tfds_data_dir(data_dir)
    if manual or glob.glob(os.path.join(folder, "mnist", "*", "dataset_info.json")):
        return
    manual_files_or_network(folder)


def manual_files_or_network(folder: str) -> str | None:
    """TFDS's manual folder of data dir `folder` when it holds the four files; else None,
    when the download host answers; else UserError, in seconds, not minutes of retries."""
    default = default_manual_dir(folder)
    if has_manual_files(default):
        return default
    if not reachable(DOWNLOAD_HOST, 443, PROBE_SECONDS):
        raise _offline(folder, default)
    return None


def _offline(folder: str, manual: str) -> UserError:
    return UserError(
        f"MNIST is not prepared in {folder} and {DOWNLOAD_HOST} cannot be reached to "
        f"download it; offline, pass --manual_dir=DIR where DIR holds the four MNIST .gz "
        f"files, or put them in {manual}"
    )


def reachable(host: str, port: int, seconds: float) -> bool:
    """Whether a TCP connection to `host` opens within `seconds`, name lookup included."""
    outcome: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=seconds):
                outcome.append(True)
        except OSError:
            outcome.append(False)

    # getaddrinfo has no timeout of its own; a daemon thread bounds it.
    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(seconds)
    return bool(outcome and outcome[0])


def strategy(name: str, task: tf_config.Task, num_cpu_devices: int = 1) -> str:
    """The strategy to build for `name` in this cluster.

    `mirrored` means "mirror over every device I am given": when TF_CONFIG
    names several tasks, those devices span machines, so it becomes
    `multi_worker_mirrored`. Single-device strategies cannot span a cluster;
    running them on every task would train independent models that overwrite
    each other's outputs, so that is refused. So is `num_cpu_devices` > 1 in
    a cluster: MultiWorkerMirroredStrategy runs one replica per GPU, or one
    per worker on CPUs, whatever the logical devices.
    """
    if name not in STRATEGIES:
        raise UserError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if task.num_workers == 1:
        return name
    if num_cpu_devices > 1:
        raise UserError(
            f"--num_cpu_devices={num_cpu_devices} cannot apply under TF_CONFIG: "
            f"MultiWorkerMirroredStrategy runs one replica per GPU, or one per worker on "
            f"CPUs; drop the flag, or unset TF_CONFIG to mirror over {num_cpu_devices} CPUs"
        )
    if name in ("mirrored", "multi_worker_mirrored"):
        return "multi_worker_mirrored"
    raise UserError(
        f"--strategy={name} trains on one device, but TF_CONFIG names {task.num_workers} "
        f"tasks; use --strategy=multi_worker_mirrored, or unset TF_CONFIG"
    )
