"""MNIST from TFDS, held in memory, and the per-replica input pipelines fed from it.

Data order is a pure function of (seed, epoch): step k of an epoch trains on
examples `epoch_order(n, seed, epoch)[k * B:(k + 1) * B]` for global batch B,
however many replicas and workers split that batch. That is what makes N
replicas at global batch B train exactly like one replica at batch B, and what
lets a run resume mid-epoch on the same examples.

Each pipeline is one dataset for the whole run, iterated once: creating a
distributed iterator costs a few tenths of a second, a quarter of an epoch.
"""

import dataclasses

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

# TFDS raises this for files whose checksum is not the registered one; it is
# not re-exported under tfds.download.
from tensorflow_datasets.core.download.download_manager import NonMatchingChecksumError

from tf_mgpu.cluster import preflight
from tf_mgpu.errors import UserError

MANUAL_FILES = preflight.MANUAL_FILES


@dataclasses.dataclass(frozen=True, eq=False)
class Split:
    """One split in memory: `images` (N, 28, 28) uint8 and `labels` (N,) int64."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclasses.dataclass(frozen=True, eq=False)
class Mnist:
    train: Split
    test: Split


def load_mnist(
    data_dir: str | None,
    manual_dir: str | None,
    train_split: str = "train",
    test_split: str = "test",
) -> Mnist:
    """Loads MNIST with TFDS, preparing it into `data_dir` first if needed.

    With `manual_dir`, TFDS's own `mnist` builder prepares the data from the
    four original .gz files there, with no network; without it, TFDS
    downloads them. MNIST is 55 MB as uint8, so both splits are held in memory.
    """
    check_manual_dir(manual_dir)
    tfds.disable_progress_bar()
    builder = tfds.builder("mnist", data_dir=data_dir)
    if not builder.is_prepared():
        builder = _prepare(
            builder, manual_dir or preflight.manual_files_or_network(builder.data_dir_root)
        )
    return Mnist(
        train=_read_split(builder, train_split, "--train_split"),
        test=_read_split(builder, test_split, "--test_split"),
    )


check_manual_dir = preflight.manual_dir


_PREPARE_ERRORS = (OSError, tfds.download.DownloadError, NonMatchingChecksumError)


def _prepare(builder: tfds.core.DatasetBuilder, manual_dir: str | None) -> tfds.core.DatasetBuilder:
    """Prepares MNIST; returns a builder that reads the prepared data."""
    try:
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
        )
        return builder
    except _PREPARE_ERRORS as e:  # no network, wrong files, unwritable data_dir, or a race
        # Workers sharing a data_dir on one machine prepare it at once; TFDS
        # lets the first finish and fails the others' final rename.
        again = tfds.builder("mnist", data_dir=builder.data_dir_root)
        if again.is_prepared():
            return again
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


def _read_split(builder: tfds.core.DatasetBuilder, split: str, flag: str) -> Split:
    try:
        arrays = tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1))
    except ValueError as e:
        raise UserError(f"{flag}={split} is not a valid TFDS split of mnist: {e}") from None
    return Split(images=arrays["image"][..., 0], labels=arrays["label"])


def steps_per_epoch(num_examples: int, global_batch: int) -> int:
    """Training steps per epoch: full global batches only (see `train_dataset`)."""
    if num_examples < global_batch:
        raise UserError(
            f"the training split has {num_examples} examples, fewer than one global batch "
            f"of {global_batch}; lower --batch_size or use a larger --train_split"
        )
    return num_examples // global_batch


def eval_steps(num_examples: int, global_batch: int) -> int:
    """Evaluation steps: enough global batches to cover every example once."""
    return -(-num_examples // global_batch)


def epoch_order(num_examples: int, seed: int, epoch) -> tf.Tensor:
    """The order in which an epoch visits the training examples.

    Stateless, so every worker computes the same order without communicating;
    TensorFlow documents it as identical across runs and between CPU and GPU.
    """
    return tf.random.experimental.stateless_shuffle(
        tf.range(num_examples, dtype=tf.int64),
        seed=tf.stack([tf.constant(seed, tf.int64), tf.cast(epoch, tf.int64)]),
        alg="philox",
    )


def train_dataset(
    split: Split,
    global_batch: int,
    seed: int,
    epochs: int,
    context: tf.distribute.InputContext,
    first_epoch: int = 0,
    first_step: int = 0,
) -> tf.data.Dataset:
    """Epochs `first_epoch` to `epochs - 1` of per-replica batches for the pipeline `context` names,
    starting at step `first_step` of the first (to resume mid-epoch).

    Sharded by data, not by file, because each MNIST split is a single file:
    every pipeline holds the whole split and keeps every N-th example of the
    epoch order. Pipeline i's replicas take consecutive batches, so at each
    step the replicas of all pipelines together hold exactly one slice of
    `epoch_order` of length `global_batch`.

    Each epoch drops its last partial global batch: splitting it would leave
    some replicas fewer (or zero) examples while the loss is still divided by
    the full global batch, workers would disagree on the number of steps and
    deadlock in the all-reduce, and a second batch shape would retrace the
    step. Each epoch then yields exactly `steps_per_epoch` steps, so batches
    never straddle two epochs.
    """
    per_replica = context.get_per_replica_batch_size(global_batch)
    replicas_here = context.num_replicas_in_sync // context.num_input_pipelines
    used = steps_per_epoch(len(split), global_batch) * global_batch
    images, labels = tf.constant(split.images), tf.constant(split.labels)

    def epoch_examples(epoch: tf.Tensor) -> tf.data.Dataset:
        order = epoch_order(len(split), seed, epoch)[:used]
        return tf.data.Dataset.from_tensor_slices(order).shard(
            context.num_input_pipelines, context.input_pipeline_id
        )

    return (
        tf.data.Dataset.range(first_epoch, epochs)
        .flat_map(epoch_examples)
        .batch(per_replica, drop_remainder=True)
        .skip(first_step * replicas_here)
        .map(lambda index: (scale(tf.gather(images, index)), tf.gather(labels, index)))
        .prefetch(tf.data.AUTOTUNE)
    )


def pad_for_eval(split: Split, global_batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The split's images, labels and weights, padded to whole global batches with weight 0.

    So every replica runs the same number of full steps, and weighted sums
    count each real example once and no padding.
    """
    size = len(split)
    pad = eval_steps(size, global_batch) * global_batch - size
    images = np.concatenate([split.images, np.zeros((pad, *split.images.shape[1:]), np.uint8)])
    labels = np.concatenate([split.labels, np.zeros(pad, split.labels.dtype)])
    weights = np.concatenate([np.ones(size, np.float32), np.zeros(pad, np.float32)])
    return images, labels, weights


def eval_dataset(
    split: Split, global_batch: int, context: tf.distribute.InputContext
) -> tf.data.Dataset:
    """Endless passes of per-replica (images, labels, weights) batches; each
    pass of `eval_steps` steps covers every example exactly once (see `pad_for_eval`).
    """
    per_replica = context.get_per_replica_batch_size(global_batch)
    return (
        tf.data.Dataset.from_tensor_slices(pad_for_eval(split, global_batch))
        .shard(context.num_input_pipelines, context.input_pipeline_id)
        .batch(per_replica, drop_remainder=True)
        .map(lambda x, y, w: (scale(x), y, w))
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def scale(images: tf.Tensor) -> tf.Tensor:
    """uint8 pixels to float32 in [0, 1]."""
    return tf.cast(images, tf.float32) / 255.0
