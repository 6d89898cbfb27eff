"""A split read by index: the user's object with `__len__` and `__getitem__(i)`.

For data larger than memory (a class over `np.memmap` files, a TFDS or Grain data
source over ArrayRecord, the user's own reader), `load_data()` may return, for any
split, an object whose `source[i]` is example i as `(x, y)` or `(x, y, sample_weight)`.
Nothing is read before training but example 0 (its shapes and dtypes):
- Each epoch is a seeded permutation of the indices, computed per position
  (`tf.random.experimental.index_shuffle`, never materialized): position p of
  epoch e is example `index_shuffle(p, (seed, e))`.
- At step k, replica r (counting every replica of every worker) takes positions
  `k*B + r*b .. k*B + (r+1)*b - 1` of the global batch B: the global batches are
  those of one device at batch B, so N replicas on M workers train like one
  device, and each worker reads only the examples its replicas train on (over the
  cluster, each example once per epoch).
- A resumed epoch starts at its step by arithmetic: nothing is read and dropped.
- Every example is checked as it is read (arity, shapes and dtypes against
  example 0, NaN or inf, a sparse label's range); a bad one stops the run with one
  line naming its index. An exception in the user's reader keeps its traceback.
Reads run in tf.data's parallel map (threads) and are prefetched.
"""

import contextlib
import dataclasses
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.engine.input import data
from tf_mgpu.engine.input.share import Share
from tf_mgpu.errors import UserError


def is_source(given) -> bool:
    """Whether load_data returned a random-access source for a split (not a pair of arrays)."""
    if isinstance(given, (tuple, list, dict, np.ndarray, tf.data.Dataset, tf.Tensor)):
        return False
    return hasattr(given, "__len__") and hasattr(given, "__getitem__")


@dataclasses.dataclass(frozen=True, eq=False)
class Source:
    """A split read by index from `reader`; `example` is example 0, which fixes the
    structure, shapes and dtypes every other example must have."""

    reader: object
    length: int
    example: tuple  # (x, y) or (x, y, w), as NumPy arrays
    where: str
    name: str
    # Mutable: the sparse label range to check as examples are read, and the failures
    # reads met (raised again outside TensorFlow by `reraise`).
    state: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return self.length

    @property
    def weighted(self) -> bool:
        return len(self.example) == 3

    def shapes(self) -> dict:
        """Each input's and the labels' shape of one example, as `checks.check_data` compares."""
        x, y = self.example[:2]
        specs = x if isinstance(x, dict) else {"x": x}
        y_shape = tf.nest.map_structure(lambda a: tuple(np.shape(a)), y)
        return {**{k: tuple(np.shape(v)) for k, v in sorted(specs.items())}, "y": y_shape}

    def expect_classes(self, classes) -> None:
        """Sparse labels must lie in [0, classes) (a sparse categorical loss), checked as
        read; for several outputs `classes` maps each `heads.Head` to its classes."""
        self.state["classes"] = classes

    def take(self, rows) -> data.Split:
        """The examples at `rows` (a slice or indices), read into memory."""
        indices = np.asarray(range(self.length)[rows] if isinstance(rows, slice) else rows)
        return data.Split(*self.read(indices))

    def in_memory(self) -> data.Split:
        """Every example as arrays: for the tools (check, bench, evaluate) that need them."""
        return self.take(slice(None))

    def read(self, indices: np.ndarray) -> tuple:
        """The examples at `indices`, stacked: (x, y) or (x, y, w); checked one by one.

        A failure (a check's UserError, or the reader's own exception) is also kept, with
        its index, for `reraise`: reads run in parallel, so the lowest index is raised."""
        examples = []
        for i in indices:
            try:
                examples.append(self._checked(int(i)))
            except Exception as e:
                self.state.setdefault("failures", []).append((int(i), e))
                raise
        return tuple(
            tf.nest.map_structure(lambda *arrays: np.stack(arrays), *[e[k] for e in examples])
            for k in range(len(self.example))
        )

    def _checked(self, index: int) -> tuple:
        got = self.reader[index]
        if not isinstance(got, (tuple, list)) or len(got) != len(self.example):
            raise self._bad(index, f"is {_kind(got)}, but example 0 is a {len(self.example)}-tuple")
        got = _example(got)
        if len(got) == 3 and (got[2] < 0).any():
            raise self._bad(index, f"has sample_weight {got[2]}; give weights >= 0")
        for name, part, first in zip(("x", "y"), got, self.example, strict=False):
            if isinstance(first, dict) and (not isinstance(part, dict) or set(part) != set(first)):
                keys = sorted(part) if isinstance(part, dict) else _kind(part)
                raise self._bad(index, f"has {name} {keys}, but example 0 has {sorted(first)}")
        for name, value, first in _named(got, self.example):
            if np.shape(value) != np.shape(first) or value.dtype != first.dtype:
                raise self._bad(
                    index,
                    f"has {name} of shape {np.shape(value)} ({value.dtype}), but example 0's "
                    f"is {np.shape(first)} ({first.dtype})",
                )
            if np.issubdtype(value.dtype, np.inexact) and not np.isfinite(value).all():
                raise self._bad(index, f"holds NaN or inf in {name}")
        classes = self.state.get("classes")
        each = classes.items() if isinstance(classes, dict) else [(None, classes)]
        for head, count in each if classes is not None else []:
            label = np.asarray(got[1] if head is None else head.labels(got[1]))
            if label.size and (label.min() < 0 or label.max() >= count):
                output = "" if head is None else f" for output {head.name!r}"
                raise self._bad(
                    index,
                    f"has label {label.reshape(-1)[0]:g}{output}, outside the model's {count} "
                    f"classes (0..{count - 1})",
                )
        return got

    def _bad(self, index: int, what: str) -> UserError:
        return UserError(
            f"{self.where}: the {self.name} source's example {index:,} {what}; fix it in "
            f"the reader (its __getitem__)"
        )

    # -- the pipelines ------------------------------------------------------------------

    def _batch_op(self, indices: tf.Tensor) -> tuple:
        """`read` inside tf.data; a failure is kept for `failures` and stops the pipeline."""

        def read(batch: np.ndarray) -> list:
            return tf.nest.flatten(self.read(batch))

        example = self.example
        flat = tf.nest.flatten(example)
        out = tf.numpy_function(read, [indices], [tf.as_dtype(a.dtype) for a in flat])
        out = [
            tf.ensure_shape(t, (indices.shape[0], *np.shape(a)))
            for t, a in zip(out, flat, strict=True)
        ]
        return tf.nest.pack_sequence_as(example, out)

    def train_dataset(
        self,
        global_batch: int,
        seed: int,
        epochs: int,
        context: tf.distribute.InputContext,
        first_epoch: int = 0,
        first_step: int = 0,
        preprocess: Callable = data.identity,
    ) -> tf.data.Dataset:
        """This pipeline's per-replica batches, epochs `first_epoch` to `epochs - 1`, from
        step `first_step` of the first: each a run of positions of the epoch's permutation."""
        share = Share.of(context, global_batch)
        here = share.here
        steps = data.steps_per_epoch(self.length, global_batch)
        n = self.length

        def indices(t: tf.Tensor) -> tf.Tensor:
            epoch, rest = t // (steps * here), t % (steps * here)
            key = tf.stack([tf.constant(seed, tf.int64), epoch])
            return tf.random.experimental.index_shuffle(share.positions(rest), key, n - 1)

        start = (first_epoch * steps + first_step) * here
        return self._pipeline(
            tf.data.Dataset.range(start, epochs * steps * here).map(indices),
            lambda *batch: (preprocess(batch[0]), *batch[1:]),
        )

    def eval_dataset(
        self,
        global_batch: int,
        context: tf.distribute.InputContext,
        preprocess: Callable = data.identity,
    ) -> tf.data.Dataset:
        """Endless passes of this pipeline's per-replica (x, y, weights[, w]) batches in
        index order, padded to whole global batches with weight-0 copies of the last
        example; each pass covers every example once over the cluster."""
        share = Share.of(context, global_batch)
        steps = data.eval_steps(self.length, global_batch)
        n = self.length

        def with_weights(p: tf.Tensor, *batch):
            weights = tf.cast(p < n, tf.float32)
            return (preprocess(batch[0]), batch[1], weights, *batch[2:])

        return self._pipeline(
            tf.data.Dataset.range(steps * share.here).repeat().map(share.positions),
            with_weights,
            keep_positions=True,
            last=n - 1,
        )

    def _pipeline(self, indices, finish, keep_positions=False, last=None) -> tf.data.Dataset:
        def read(i):
            batch = self._batch_op(i if last is None else tf.minimum(i, last))
            return (i, *batch) if keep_positions else batch

        return (
            indices.map(read, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .map(finish)
            .prefetch(tf.data.AUTOTUNE)
        )


def open_source(given, where: str, name: str) -> Source:
    """The Source for `given`, checked on its example 0 only (nothing else is read)."""
    try:
        length = len(given)
    except TypeError as e:
        raise UserError(f"{where}: load_data()'s {name} source has no length ({e})") from None
    if length <= 0:
        raise UserError(f"{where}: the {name} source is empty; load_data() must return examples")
    if isinstance(given, keras.utils.PyDataset):
        raise UserError(
            f"{where}: load_data()'s {name} split is a keras.utils.PyDataset, whose items are "
            f"batches; tf_mgpu batches itself: return an object whose __getitem__(i) gives "
            f"example i as (x, y)"
        )
    first = given[0]
    if not isinstance(first, (tuple, list)) or len(first) not in (2, 3):
        raise UserError(
            f"{where}: load_data()'s {name} source gives {_kind(first)} for example 0; its "
            f"__getitem__(i) must return (x, y) or (x, y, sample_weight) (a TFDS or Grain "
            f"source of feature dicts: wrap it in a class that returns that pair)"
        )
    example = _example(first)
    source = Source(given, length, example, where, name)
    source._checked(0)  # NaN in example 0, say
    return source


@contextlib.contextmanager
def reraise(*splits):
    """Around a compiled call that reads `splits`: a failure in a source's read comes out
    as itself (the one line of a check, or the user's own exception and traceback),
    not as TensorFlow's wrapping of it."""
    try:
        yield
    except tf.errors.OpError:
        failures = [f for s in splits if isinstance(s, Source) for f in s.state.pop("failures", [])]
        if failures:
            _, failure = min(failures, key=lambda found: found[0])
            raise failure from None
        raise


def _example(got) -> tuple:
    """An example as arrays: x (an array or a dict), y (an array, or a dict or tuple of
    them for several outputs), and the sample weight as one float32 number."""
    x, y, *w = got
    x = {k: np.asarray(v) for k, v in x.items()} if isinstance(x, dict) else np.asarray(x)
    if isinstance(y, dict):
        y = {k: np.asarray(v) for k, v in y.items()}
    elif isinstance(y, tuple):  # one label per output (a list is one label: one-hot, say)
        y = tuple(np.asarray(v) for v in y)
    else:
        y = np.asarray(y)
    weight = [np.asarray(w[0], np.float32).reshape(-1)] if w else []
    return (x, y, *[a.reshape(()) if a.size == 1 else a for a in weight])


def _named(got: tuple, first: tuple):
    """(name, value, example 0's value) for every array of an example."""
    names = ("x", "y", "sample_weight")
    for k, (value, expected) in enumerate(zip(got, first, strict=True)):
        if isinstance(expected, dict):  # same keys: checked before
            for key in sorted(expected):
                yield f"{names[k]}[{key!r}]", value[key], expected[key]
        elif isinstance(expected, tuple):
            if not isinstance(value, tuple) or len(value) != len(expected):
                value = tuple(np.full(len(expected), np.nan))  # reported as a shape drift
            for j, (one, first_one) in enumerate(zip(value, expected, strict=True)):
                yield f"{names[k]}[{j}]", np.asarray(one), first_one
        else:
            yield names[k], value, expected


def _kind(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {len(value)}-tuple"
    return type(value).__name__
