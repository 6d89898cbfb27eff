"""A task's data in memory, the order each epoch visits it, and the per-replica pipelines.

Data order is a pure function of (seed, epoch): step k of an epoch trains on
examples `epoch_order(n, seed, epoch)[k * B:(k + 1) * B]` for global batch B,
however many replicas and workers split that batch. That is what makes N
replicas at global batch B train exactly like one replica at batch B, and what
lets a run resume mid-epoch on the same examples.

Features `x` are one array, a dict of arrays (a model with named inputs) or a tuple of
them (a model's inputs in order, as `fit(x=[a, b])` takes them); labels `y` one array, a
dict or tuple of arrays (a model with several outputs, see
`tf_mgpu.engine.model.heads`), or `()` where the task gives none (`fit(x)` with no y);
every array has one row per example.
Each pipeline is one dataset for the whole run, iterated once: creating a
distributed iterator costs a few tenths of a second.
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from tf_mgpu.engine.input.share import Share
from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True, eq=False)
class Split:
    """One split in memory: `x` (an array or a dict of arrays), `y` (an array, or a dict or
    tuple of arrays for several outputs), and optionally `w`, each example's weight in the
    loss (Keras's `sample_weight`), one row per example."""

    x: object
    y: object
    w: np.ndarray | None = None

    def __len__(self) -> int:
        return len(tf.nest.flatten(self.x)[0])

    def take(self, rows) -> "Split":
        """The examples at `rows` (a slice or indices), as a new Split."""
        x, y = tf.nest.map_structure(lambda a: a[rows], (self.x, self.y))
        return Split(x, y, None if self.w is None else self.w[rows])

    def labels(self) -> tuple:
        """(y,) or (y, w): what a step takes after x."""
        return (self.y,) if self.w is None else (self.y, self.w)


@dataclasses.dataclass(frozen=True, eq=False)
class Data:
    train: Split
    test: Split
    validation: Split | None = None  # evaluated every epoch as val_*, when there is one


def held_out(datasets: Data, fraction: float, where: str) -> Data:
    """The last `fraction` of the training arrays as the validation split, as Keras's
    `fit(validation_split=...)` takes it (before any shuffling)."""
    if not fraction:
        return datasets
    if datasets.validation is not None:
        raise UserError(
            f"{where}: load_data() returns a validation split and --validation_split is "
            f"{fraction:g}; drop one of the two"
        )
    if not isinstance(datasets.train, Split):
        raise UserError(
            f"--validation_split holds out arrays; {where} gives a tf.data.Dataset or a "
            f"source read by index: return (train, validation, test) from load_data() instead"
        )
    kept = int(len(datasets.train) * (1 - fraction))
    if kept in (0, len(datasets.train)):
        raise UserError(
            f"--validation_split={fraction:g} of {len(datasets.train):,} training examples "
            f"leaves one side empty; choose a fraction that splits them"
        )
    train = datasets.train
    return Data(train.take(slice(0, kept)), datasets.test, train.take(slice(kept, None)))


def identity(x):
    return x


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


def gather(arrays, rows: tf.Tensor):
    """The rows `rows` of every array in `arrays` (one array or a dict of them)."""
    return tf.nest.map_structure(lambda a: tf.gather(a, rows), arrays)


def features(x) -> list[tuple[str, object]]:
    """Each input array of `x`, with how errors name it: 'x', a dict's key ('image'), or
    'x[0]' for a tuple of inputs."""
    if isinstance(x, dict):
        return sorted(x.items())
    if isinstance(x, (list, tuple)):
        return [(f"x[{index}]", array) for index, array in enumerate(x)]
    return [("x", x)]


def labelled(y) -> list[tuple[str, object]]:
    """Each label array of `y`, with how errors name it: 'y', or "y['price']" (a dict) and
    'y[0]' (a tuple) for several outputs."""
    if isinstance(y, dict):
        return [(f"y[{key!r}]", array) for key, array in sorted(y.items())]
    if isinstance(y, (list, tuple)):
        return [(f"y[{index}]", array) for index, array in enumerate(y)]
    return [("y", y)]


def in_split(key: str, split: str) -> str:
    """How errors name an array of a split: x_train, y_test, y_train['price'] (key y['price'])."""
    base, bracket, rest = key.partition("[")
    return f"{base}_{split}{bracket}{rest}"


def train_dataset(
    split: Split,
    global_batch: int,
    seed: int,
    epochs: int,
    context: tf.distribute.InputContext,
    first_epoch: int = 0,
    first_step: int = 0,
    preprocess: Callable = identity,
) -> tf.data.Dataset:
    """Epochs `first_epoch` to `epochs - 1` of per-replica batches for the pipeline `context` names,
    starting at step `first_step` of the first (to resume mid-epoch).

    Sharded by data: every pipeline holds the whole split and keeps every N-th
    example of the epoch order. Pipeline i's replicas take consecutive
    batches, so at each step the replicas of all pipelines together hold
    exactly one slice of `epoch_order` of length `global_batch`.

    Each epoch drops its last partial global batch: splitting it would leave
    some replicas fewer (or zero) examples while the loss is still divided by
    the full global batch, workers would disagree on the number of steps and
    deadlock in the all-reduce, and a second batch shape would retrace the
    step. Each epoch then yields exactly `steps_per_epoch` steps, so batches
    never straddle two epochs.
    """
    used = steps_per_epoch(len(split), global_batch) * global_batch
    x = tf.nest.map_structure(tf.constant, split.x)
    labels = [tf.nest.map_structure(tf.constant, a) for a in split.labels()]

    def epoch_examples(epoch: tf.Tensor) -> tf.data.Dataset:
        order = epoch_order(len(split), seed, epoch)[:used]
        return tf.data.Dataset.from_tensor_slices(order).shard(
            context.num_input_pipelines, context.input_pipeline_id
        )

    return per_replica_batches(
        tf.data.Dataset.range(first_epoch, epochs).flat_map(epoch_examples),
        global_batch,
        context,
        first_step,
        lambda index: (preprocess(gather(x, index)), *[gather(a, index) for a in labels]),
    )


def per_replica_batches(
    examples: tf.data.Dataset,
    global_batch: int,
    context: tf.distribute.InputContext,
    first_step: int,
    to_batch: Callable,
) -> tf.data.Dataset:
    """This pipeline's share of the epochs' examples, in order, as per-replica batches
    from step `first_step` on, each batch made by `to_batch`.

    The pipeline's replicas take consecutive batches, so skipping `first_step` steps
    skips that many batches per local replica.
    """
    share = Share.of(context, global_batch)
    return (
        examples.batch(share.per_replica, drop_remainder=True)
        .skip(first_step * share.here)
        .map(to_batch)
        .prefetch(tf.data.AUTOTUNE)
    )


def pad_for_eval(split: Split, global_batch: int) -> tuple:
    """The split's x, y and weights (then its sample weights, if it has any), padded to
    whole global batches; padding has weight 0.

    So every replica runs the same number of full steps, and weighted sums
    count each real example once and no padding.
    """
    size = len(split)
    pad = eval_steps(size, global_batch) * global_batch - size

    def padded(array: np.ndarray) -> np.ndarray:
        return np.concatenate([array, np.zeros((pad, *array.shape[1:]), array.dtype)])

    weights = np.concatenate([np.ones(size, np.float32), np.zeros(pad, np.float32)])
    sample_weights = () if split.w is None else (padded(split.w),)
    x, y = tf.nest.map_structure(padded, (split.x, split.y))
    return x, y, weights, *sample_weights


def eval_dataset(
    split: Split,
    global_batch: int,
    context: tf.distribute.InputContext,
    preprocess: Callable = identity,
) -> tf.data.Dataset:
    """Endless passes of per-replica (x, y, weights) batches; each pass of `eval_steps`
    steps covers every example exactly once (see `pad_for_eval`), replica r taking the r-th
    run of each global batch (`share.Share`), so its real rows are a prefix of its batch.
    """
    share = Share.of(context, global_batch)
    padded = tf.nest.map_structure(tf.constant, pad_for_eval(split, global_batch))
    steps = eval_steps(len(split), global_batch)
    return (
        tf.data.Dataset.range(steps * share.here)
        .repeat()
        .map(lambda t: gather(padded, share.positions(t)))
        .map(lambda x, *rest: (preprocess(x), *rest))
        .prefetch(tf.data.AUTOTUNE)
    )
