"""Arrays read by index: a split too large for the devices, served from host memory.

When `tf_mgpu.engine.input.placement` decides a task's arrays do not fit on the devices (or
they are `np.memmap` files, which are never read whole), each split becomes an
`ArraySource`: the `tf_mgpu.engine.input.source.Source` machinery over the arrays, with
two differences:
- Rows are gathered with NumPy fancy indexing, a batch at a time, in tf.data's
  parallel map: the arrays stay in host memory (or on disk, paged in by the OS),
  never in a graph or on a device.
- The epoch order is `data.epoch_order`, the resident path's: step k of an epoch
  trains on `epoch_order(n, seed, epoch)[k * B:(k + 1) * B]` and replica r on its
  r-th run of that batch, exactly as `loop.ResidentTrain` gathers it. So whichever
  way the arrays are served, a run takes the same steps, and a run resumed on a
  machine that chose the other way continues the same trajectory.
Rows are checked as they are read (NaN or inf; a sparse label's range), with one
line naming the array and the example's index, as `checks.check_data` would have.
"""

import mmap
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from tf_mgpu.engine.input import data, source
from tf_mgpu.engine.input.share import Share
from tf_mgpu.errors import UserError


def is_mapped(array) -> bool:
    """Whether `array` is backed by a memory-mapped file (np.memmap, np.load's
    mmap_mode, or a view of one): reading it whole would read the file."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def in_floatx(datasets: data.Data, floatx: str) -> data.Data:
    """`datasets` with every float array of another float dtype cast to `floatx`, as Keras's
    fit casts NumPy arrays (x, y and sample weights) before its first step: float64 arrays
    become float32 (a random latent vector concatenated to them then matches their dtype).
    Arrays mapped from files are read as they are; tf.data splits are Keras's to leave."""

    def cast(array):
        if isinstance(array, np.ndarray) and not is_mapped(array):
            kind = array.dtype
            if np.issubdtype(kind, np.floating) and kind != np.dtype(floatx):
                return array.astype(floatx)
        return array

    def each(split):
        if not isinstance(split, data.Split):
            return split
        x, y = tf.nest.map_structure(cast, (split.x, split.y))
        return data.Split(x, y, None if split.w is None else cast(split.w))

    return data.Data(each(datasets.train), each(datasets.test), each(datasets.validation))


def named_arrays(split: data.Split, name: str) -> list[tuple[str, np.ndarray]]:
    """Every array of `split`, with how errors name it (x_train, y_train['price'], ...)."""
    x = split.x
    features = (
        [(f"x[{k!r}]", a) for k, a in sorted(x.items())]
        if isinstance(x, dict)
        else data.features(x)
    )
    weights = [] if split.w is None else [("sample_weight", split.w)]
    return [(data.in_split(k, name), a) for k, a in [*features, *data.labelled(split.y), *weights]]


def nbytes(split) -> int:
    """The bytes of a split's arrays (0 for a split that is not arrays)."""
    if not isinstance(split, data.Split):
        return 0
    return sum(a.nbytes for _, a in named_arrays(split, ""))


class ArraySource(source.Source):
    """A `data.Split` read by index; `reader` is the split."""

    @classmethod
    def of(cls, split: data.Split, where: str, name: str) -> "ArraySource":
        example = tf.nest.map_structure(lambda a: np.asarray(a[0]), split.labels())
        x = tf.nest.map_structure(lambda a: np.asarray(a[0]), split.x)
        return cls(split, len(split), (x, *example), where, name)

    def in_memory(self) -> data.Split:
        return self.reader

    def read(self, indices: np.ndarray) -> tuple:
        """The rows at `indices`, gathered: (x, y) or (x, y, w); checked as a batch, a
        failure naming the lowest bad index (kept for `source.reraise` too)."""
        indices = np.asarray(indices, np.int64)
        split = self.reader
        rows = data.Split(
            *[
                tf.nest.map_structure(lambda a: np.asarray(a[indices]), part)
                for part in (split.x, *split.labels())
            ]
        )
        found = self._problems(rows, indices)
        if found:
            index, what = min(found)
            error = UserError(f"{self.where}: {what}")
            self.state.setdefault("failures", []).append((index, error))
            raise error
        return (rows.x, *rows.labels())

    def _problems(self, rows: data.Split, indices: np.ndarray) -> list[tuple[int, str]]:
        """(index, what is wrong there) for the first bad row of each check."""
        found = []
        for key, array in named_arrays(rows, self.name):
            if np.issubdtype(array.dtype, np.inexact):
                bad = ~np.isfinite(array.reshape(len(array), -1)).all(axis=1)
                if bad.any():
                    i = int(indices[bad].min())
                    what = f"{key} holds NaN or inf at example {i:,}; clean or impute it"
                    found.append((i, f"{what} in load_data()"))
        classes = self.state.get("classes")
        each = classes.items() if isinstance(classes, dict) else [(None, classes)]
        for head, count in each if classes is not None else []:
            labels = np.asarray(rows.y if head is None else head.labels(rows.y))
            flat = labels.reshape(len(labels), -1)
            wrong = (flat < 0) | (flat >= count) | (flat != np.round(flat))
            bad = wrong.any(axis=1)
            if bad.any():
                row = np.flatnonzero(bad)[np.argmin(indices[bad])]
                i, value = int(indices[row]), flat[row][wrong[row]][0]
                named = f"y_{self.name}" if head is None else head.label(rows.y, f"y_{self.name}")
                found.append(
                    (
                        i,
                        f"{named} holds label {value:g} at example {i:,}, but the model outputs "
                        f"{count} classes (0..{count - 1}); give class indices in that range",
                    )
                )
        return found

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
        step `first_step` of the first: replica r (over every worker) of step k takes the
        r-th run of its per-replica batch in `epoch_order[k * B:(k + 1) * B]`. Nothing
        before `first_step` is read."""
        share = Share.of(context, global_batch)
        here = share.here
        steps = data.steps_per_epoch(self.length, global_batch)
        n = self.length

        def epoch_batches(epoch: tf.Tensor) -> tf.data.Dataset:
            order = data.epoch_order(n, seed, epoch)  # once per epoch

            def indices(t: tf.Tensor) -> tf.Tensor:
                return tf.gather(order, share.positions(t))

            start = tf.where(epoch == first_epoch, tf.constant(first_step * here, tf.int64), 0)
            return tf.data.Dataset.range(start, steps * here).map(indices)

        return self._pipeline(
            tf.data.Dataset.range(first_epoch, epochs).flat_map(epoch_batches),
            lambda *batch: (preprocess(batch[0]), *batch[1:]),
        )
