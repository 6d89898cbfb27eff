"""Checks that MNIST can be had, made before TensorFlow loads: a typo costs under a second.

MNIST can be had when it is prepared in the TFDS data dir, when the four
original files are in --manual_dir or in TFDS's manual folder, or when the
download host answers. `tf_mgpu.tasks.mnist.data` checks the same again with
TFDS itself. Nothing here imports TensorFlow.
"""

import glob
import os
import socket
import threading

from tf_mgpu.cluster import netns
from tf_mgpu.errors import UserError

MANUAL_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


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
    answers. `tf_mgpu.tasks.mnist.data` checks the same again with TFDS itself.
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
    why = (
        f"MNIST is not prepared in {folder} and {DOWNLOAD_HOST} cannot be reached to "
        f"download it; offline, pass --manual_dir=DIR where DIR holds the four MNIST .gz "
        f"files, or put them in {manual}"
    )
    if os.environ.get(netns.ENV) == "1":  # set by the launcher: this machine may be online
        why += (
            "; tf_mgpu.launch runs its workers without network (a private network namespace, "
            "loopback only): download MNIST once without the launcher (any tf_mgpu.main run "
            "with this --data_dir does), or pass the launcher --noprivate_network"
        )
    return UserError(why)


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
