"""MNIST from TFDS, prepared offline from the four original files when asked, held in memory.

The prepared splits are read whole once and kept as one array file
(`tf_mgpu.tasks.mnist.cache`); later runs read that.
"""

import contextlib
import fcntl
import os

from tf_mgpu.engine.input.data import Data, Split
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import cache, preflight


def load(
    data_dir: str | None,
    manual_dir: str | None,
    train_split: str = "train",
    test_split: str = "test",
) -> Data:
    """MNIST as uint8 images (N, 28, 28) and int64 labels, prepared into `data_dir` if needed.

    With `manual_dir`, TFDS's own `mnist` builder prepares the data from the
    four original .gz files there, with no network; without it, TFDS
    downloads them. MNIST is 55 MB as uint8, so both splits are held in memory.
    """
    preflight.manual_dir(manual_dir)
    # Once prepared and cached, common split strings need no TFDS at all (0.8 s).
    whole = cache.read_prepared(preflight.tfds_data_dir(data_dir))
    if whole is not None:
        train = cache.select_simple(whole, train_split)
        test = cache.select_simple(whole, test_split)
        if train is not None and test is not None:
            return Data(train=train, test=test)
    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    builder = tfds.builder("mnist", data_dir=data_dir)
    if not builder.is_prepared():
        with _preparing(builder.data_dir_root):
            # Another process may have prepared it while this one waited.
            builder = tfds.builder("mnist", data_dir=data_dir)
            if not builder.is_prepared():
                builder = _prepare(
                    builder, manual_dir or preflight.manual_files_or_network(builder.data_dir_root)
                )
    if whole is None:  # the cache read above stands unless it missed
        whole = cache.read(builder)
    if whole is None:
        whole = {name: _read_whole(builder, name) for name in cache.SPLITS}
        cache.write(builder, whole)
    return Data(
        train=_select(builder, whole, train_split, "--train_split"),
        test=_select(builder, whole, test_split, "--test_split"),
    )


@contextlib.contextmanager
def _preparing(data_dir: str):
    """Holds an exclusive lock on `data_dir` while this process prepares MNIST there.

    Workers sharing a data dir on one machine would otherwise prepare it at once,
    and TFDS fails the later ones' renames at any of several points.
    """
    try:
        os.makedirs(data_dir, exist_ok=True)
        lock = open(os.path.join(data_dir, ".tf_mgpu_prepare.lock"), "w")  # noqa: SIM115
    except OSError as e:
        raise UserError(
            f"could not prepare MNIST in {data_dir} ({type(e).__name__}: {e.strerror}); "
            f"check that --data_dir is writable and names a folder"
        ) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _prepare(builder, manual_dir: str | None):
    """Prepares MNIST; returns a builder that reads the prepared data."""
    import tensorflow_datasets as tfds

    # TFDS raises this for files whose checksum is not the registered one; it is
    # not re-exported under tfds.download.
    from tensorflow_datasets.core.download.download_manager import NonMatchingChecksumError

    try:
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
        )
        return builder
    except (OSError, tfds.download.DownloadError, NonMatchingChecksumError) as e:
        # no network, wrong files, or an unwritable data_dir
        fix = (
            "check that --data_dir is writable and --manual_dir holds the original, "
            "uncorrupted files"
            if manual_dir
            else "offline, pass --manual_dir=DIR where DIR holds the four MNIST .gz files"
        )
        raise UserError(
            f"could not prepare MNIST in {builder.data_dir} "
            f"({type(e).__name__}: {str(e)[:200]}); {fix}"
        ) from None


def _read_whole(builder, split: str) -> Split:
    """One prepared split, whole, in TFDS's file order."""
    import tensorflow_datasets as tfds

    arrays = tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1))
    return Split(x=arrays["image"][..., 0], y=arrays["label"])


def _select(builder, whole: dict, split: str, flag: str) -> Split:
    try:
        return cache.select(builder, whole, split)
    except ValueError as e:
        raise UserError(f"{flag}={split} is not a valid TFDS split of mnist: {e}") from None
