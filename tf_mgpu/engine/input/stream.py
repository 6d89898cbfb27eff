"""A split given as a `tf.data.Dataset`, read as training goes instead of held in memory.

A task's `load_data` may return, for either split, a dataset of unbatched
(x, y) elements (y a dict or tuple of labels for a model with several
outputs), or one it batched itself, which is read as its examples
(`tf_mgpu.engine.input.stream_batched`). It is never read into memory for training:
- A dataset of known length (its cardinality) is not read before training;
  each example is checked as it is read (`tf_mgpu.engine.input.stream_checks`). One
  of unknown length is read once at start (`scan`), which counts and checks
  it as arrays are checked (non-finite values, the label range), keeping only
  the counts.
- Each epoch reads the dataset once more, shuffled through a buffer of
  `SHUFFLE_BUFFER` examples seeded from (--seed, epoch), and split over
  workers and replicas by `tf_mgpu.engine.input.stream_shard`; training goes
  through `tf_mgpu.engine.step.stream_train`, whose saved iterator resumes an
  epoch exactly. A dataset must yield its elements in the same order each
  time it is read (no `deterministic=False`).
Evaluation reads every test example once per pass, padded to whole global
batches with weight-0 zeros shaped as the first example, each replica taking its run of
each global batch (`tf_mgpu.engine.input.share`).
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from tf_mgpu.engine.input import data, source, stream_batched, stream_checks
from tf_mgpu.engine.input.share import Share
from tf_mgpu.errors import UserError

SHUFFLE_BUFFER = 10_000
_SCAN_BATCH = 4096


@dataclasses.dataclass(frozen=True, eq=False)
class Stream:
    """A split as a dataset of unbatched (x, y) or (x, y, sample_weight) elements, with what
    `scan` found in it."""

    dataset: tf.data.Dataset
    length: int
    nonfinite: dict  # "x" (or an input's name) or "y" (y['price']...) -> NaN or inf values
    # (smallest, largest label, whether every label is an integer), or for several
    # outputs one such tuple per label array, in y's dict or tuple
    label_range: object
    # Not scanned (its length known): each example is checked as read, by `stream_checks`;
    # nonfinite and label_range are then empty. where/name say whose split it is.
    checked_as_read: bool = False
    where: str = ""
    name: str = ""
    state: dict = dataclasses.field(default_factory=dict)  # "classes", once known
    batched: stream_batched.Batched | None = None  # how the user batched it, if they did

    def expect_classes(self, classes) -> None:
        """Sparse labels must lie in [0, classes), checked as read (see `stream_checks`)."""
        self.state["classes"] = classes

    def examples(self, dataset: tf.data.Dataset | None = None, whose: str = "") -> tf.data.Dataset:
        """The dataset's examples (or `dataset`'s: a part of it, `whose`, as
        " (worker 1's files)"), checked as read if no scan checked them."""
        dataset = self.dataset if dataset is None else dataset
        if not self.checked_as_read:
            return dataset
        name = f"{self.name} dataset{whose}"
        return stream_checks.checked(dataset, self.where, name, self.state.get("classes"))

    def __len__(self) -> int:
        return self.length

    def take(self, rows: slice) -> data.Split:
        """The examples at the leading slice `rows`, in memory (a few, to build the model)."""
        start, stop, step = rows.indices(self.length)
        if step != 1:
            raise ValueError("a stream takes only a contiguous run of rows")
        return _arrays(self.dataset.skip(start).take(stop - start))

    def shapes(self) -> dict:
        x, y = self.dataset.element_spec[:2]
        specs = x if isinstance(x, dict) else {"x": x}
        return {
            **{
                k: tf.nest.map_structure(lambda s: tuple(s.shape), s)
                for k, s in sorted(specs.items())
            },
            "y": tf.nest.map_structure(lambda s: tuple(s.shape), y),
        }

    def in_memory(self) -> data.Split:
        """Every example as arrays: for the tools (check, bench, evaluate) that need them."""
        return _arrays(self.dataset)


def scan(dataset: tf.data.Dataset, where: str, name: str) -> Stream:
    """One pass over `dataset`: its length and its checks' findings, nothing kept. A
    dataset the user batched is read as its examples."""
    dataset, batched = stream_batched.unbatched(dataset)
    spec = dataset.element_spec
    if not (isinstance(spec, tuple) and len(spec) in (2, 3)):
        raise UserError(
            f"{where}: load_data()'s {name} dataset yields {spec}; it must yield unbatched "
            f"(x, y) or (x, y, sample_weight) elements"
        )
    if len(spec) == 3:
        dataset = _one_weight_each(dataset, where, name)
    known = int(dataset.cardinality())
    if known == 0:
        raise UserError(f"{where}: the {name} dataset is empty; load_data() must return examples")
    if known > 0:  # its length is known: nothing is read before training
        return Stream(dataset, known, {}, None, True, where, name, batched=batched)
    if known == tf.data.INFINITE_CARDINALITY:
        raise UserError(
            f"{where}: the {name} dataset repeats forever; return one pass over the "
            f"examples (no .repeat()): tf_mgpu makes the epochs"
        )
    length, nonfinite = 0, {}
    ranges = [(np.inf, -np.inf, True)] * len(tf.nest.flatten(spec[1]))
    for x, y, *w in dataset.batch(_SCAN_BATCH).as_numpy_iterator():
        labels = tf.nest.flatten(y)
        length += len(labels[0])
        weights = [("sample_weight", w[0])] if w else []
        features = x.items() if isinstance(x, dict) else [("x", x)]
        for key, array in [*features, *data.labelled(y), *weights]:
            if np.issubdtype(array.dtype, np.inexact):
                bad = int(array.size - np.count_nonzero(np.isfinite(array)))
                nonfinite[key] = nonfinite.get(key, 0) + bad
        if w and (w[0] < 0).any():
            raise UserError(
                f"{where}: the {name} dataset's sample_weight holds negative weights; "
                f"weights must be >= 0"
            )
        ranges = [_widened(known, array) for known, array in zip(ranges, labels, strict=True)]
    if length == 0:
        raise UserError(f"{where}: the {name} dataset is empty; load_data() must return examples")
    ranges = tf.nest.pack_sequence_as(spec[1], ranges)
    return Stream(dataset, length, nonfinite, ranges, False, where, name, batched=batched)


def _one_weight_each(dataset: tf.data.Dataset, where: str, name: str) -> tf.data.Dataset:
    """(x, y, sample_weight) elements with float32 weights, as Keras takes them: one number
    per example (a scalar), or one per position of the loss (a weight per token)."""
    shape = tuple(dataset.element_spec[2].shape)
    if None in shape:
        raise UserError(
            f"{where}: load_data()'s {name} dataset yields sample weights of shape {shape}; "
            f"give one number per example, or weights of one fixed shape"
        )
    scalar = shape in ((), (1,))
    return dataset.map(
        lambda x, y, w: (x, y, tf.reshape(tf.cast(w, tf.float32), [] if scalar else shape))
    )


def _widened(known: tuple, y: np.ndarray) -> tuple:
    """(smallest, largest, all integers) over the labels seen so far and `y`."""
    low, high, integral = known
    if y.size and np.issubdtype(y.dtype, np.number):
        low, high = min(low, float(y.min())), max(high, float(y.max()))
        integral = integral and bool(np.array_equal(y, np.round(y)))
    return low, high, integral


def _arrays(dataset: tf.data.Dataset) -> data.Split:
    parts = list(dataset.batch(_SCAN_BATCH).as_numpy_iterator())
    x, y, *w = tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *parts)
    return data.Split(x, y, w[0] if w else None)


def materialized(datasets: data.Data) -> data.Data:
    """`datasets` with every stream read into memory."""

    def whole(split):
        return split.in_memory() if isinstance(split, (Stream, source.Source)) else split

    validation = None if datasets.validation is None else whole(datasets.validation)
    return data.Data(train=whole(datasets.train), test=whole(datasets.test), validation=validation)


def streams(datasets: data.Data) -> bool:
    """Whether any split is read as training goes (a tf.data dataset, or a source read by
    index), so every split goes through the tf.data pipelines."""
    splits = (datasets.train, datasets.test, datasets.validation)
    return any(isinstance(split, (Stream, source.Source)) for split in splits)


def epoch_seed(seed: int, epoch: int) -> int:
    # A Python int: a tensor seed fails once a global seed is set (keras.utils.set_random_seed).
    return (seed * 1_000_003 + epoch) % 2**31


def train_dataset(
    split,
    global_batch: int,
    seed: int,
    epochs: int,
    context: tf.distribute.InputContext,
    first_epoch: int = 0,
    first_step: int = 0,
    preprocess: Callable = data.identity,
) -> tf.data.Dataset:
    """As `tf_mgpu.engine.input.data.train_dataset`, for arrays and sources read by index (a
    Stream trains from `stream_shard.worker_steps`, through `tf_mgpu.engine.step.stream_train`)."""
    if isinstance(split, source.Source):
        return split.train_dataset(
            global_batch, seed, epochs, context, first_epoch, first_step, preprocess
        )
    return data.train_dataset(
        split, global_batch, seed, epochs, context, first_epoch, first_step, preprocess
    )


def eval_dataset(
    split,
    global_batch: int,
    context: tf.distribute.InputContext,
    preprocess: Callable = data.identity,
) -> tf.data.Dataset:
    """As `tf_mgpu.engine.input.data.eval_dataset`, for a Stream (arrays go there, and a source
    read by index to its own)."""
    if isinstance(split, source.Source):
        return split.eval_dataset(global_batch, context, preprocess)
    if not isinstance(split, Stream):
        return data.eval_dataset(split, global_batch, context, preprocess)
    per_replica = context.get_per_replica_batch_size(global_batch)
    pad = data.eval_steps(len(split), global_batch) * global_batch - len(split)
    # (x, y, padding weight), then the sample weight if the dataset has them.
    real = split.examples().map(lambda x, y, *w: (x, y, tf.constant(1.0), *w))
    # Made once and held (cache): the first example of a dataset the user batched costs a
    # whole batch of their pipeline, which each of `pad` copies would otherwise run again.
    filler = (
        real.take(1)
        .map(
            lambda x, y, *weights: (
                tf.nest.map_structure(tf.zeros_like, x),
                tf.nest.map_structure(tf.zeros_like, y),
                *[tf.zeros_like(w) for w in weights],
            )
        )
        .cache()
    )
    share = Share.of(context, global_batch)
    replicas = share.here * share.pipelines

    def mine(t, _) -> tf.Tensor:  # replica t % replicas's run of its global batch
        return (t % replicas) // share.here == share.pipeline

    return (
        real.concatenate(filler.repeat(pad))
        .batch(per_replica, drop_remainder=True)
        .enumerate()
        .filter(mine)
        .map(lambda _, batch: batch)
        .map(lambda x, *rest: (preprocess(x), *rest))
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )
