"""A tf.data split of known length, checked as it is read instead of scanned before training.

A dataset whose cardinality is known (`dataset.apply(
tf.data.experimental.assert_cardinality(n))`, or one made from arrays) is not
read before the first step: each example is checked as the pipelines read it,
with TensorFlow ops (`tf.debugging.Assert`), so the pipeline stays one whose
iterator can be saved (`tf_mgpu.engine.step.stream_train`). Examples are numbered
as the dataset yields them, before any shuffle. A bad one (NaN or inf, a
negative sample weight, a sparse label outside the model's classes) stops the
call that read it; `reraise` turns TensorFlow's error into the one line the
same check gives for arrays, naming the example's number.
"""

import contextlib
import re

import tensorflow as tf

from tf_mgpu.errors import UserError

_MARK = "tf_mgpu-bad-example"
_FOUND = re.compile(re.escape(_MARK) + r"\] \[(.*?)\] \[(\d+)\] \[(.*?)\]")


def checked(dataset: tf.data.Dataset, where: str, name: str, classes) -> tf.data.Dataset:
    """`dataset` with each example checked as read: finite values, sample weights >= 0,
    and (`classes`, from a sparse categorical loss) labels in [0, classes); for several
    outputs `classes` maps each `heads.Head` to its classes."""
    said = f"{where}: the {name}'s example"

    def check(index, example):
        x, y, *w = example
        tests = [(_finite(part), f"holds NaN or inf in {what}") for what, part in _parts(x, y, w)]
        if w:
            tests.append((tf.reduce_all(w[0] >= 0), "has a negative sample_weight; give >= 0"))
        each = classes.items() if isinstance(classes, dict) else [(None, classes)]
        for head, count in each if classes is not None else []:
            label = y if head is None else head.labels(y)
            output = "" if head is None else f" for output {head.name!r}"
            tests.append(
                (
                    _in_range(label, count),
                    f"has a label{output} outside the model's {count} "
                    f"classes (0..{count - 1}), or not an integer",
                )
            )
        asserts = [tf.debugging.Assert(ok, [_MARK, said, index, what]) for ok, what in tests]
        with tf.control_dependencies(asserts):
            return tf.nest.map_structure(tf.identity, example)

    return dataset.enumerate().map(check)


def _parts(x, y, w):
    for what, part in (("x", x), ("y", y)):
        yield from _flat(part, what)
    if w:
        yield "sample_weight", w[0]


def _flat(value, what: str):
    if isinstance(value, dict):
        return [(f"{what}[{k!r}]", v) for k, v in sorted(value.items())]
    if isinstance(value, (tuple, list)):
        return [(f"{what}[{j}]", v) for j, v in enumerate(value)]
    return [(what, value)]


def _finite(tensor: tf.Tensor) -> tf.Tensor:
    if not tensor.dtype.is_floating:
        return tf.constant(True)
    return tf.reduce_all(tf.math.is_finite(tensor))


def _in_range(label: tf.Tensor, count: int) -> tf.Tensor:
    value = tf.cast(label, tf.float64)
    return tf.reduce_all((value >= 0) & (value < count) & (value == tf.round(value)))


@contextlib.contextmanager
def reraise():
    """Around a compiled call that reads checked datasets: a failed check comes out as
    its one line (UserError), not as TensorFlow's InvalidArgumentError; so do a
    dataset --stream_shard=file cannot shard by file, and a worker it leaves no files."""
    try:
        yield
    except tf.errors.NotFoundError as e:
        if "unshardable source dataset" not in e.message:
            raise
        raise UserError(
            "--stream_shard=file: tf.data found no file reader to shard in the training "
            "dataset (it reads no files, or joins another dataset before them); build it from "
            "Dataset.list_files(..., shuffle=False) read by TFRecordDataset, or drop the flag"
        ) from None
    except tf.errors.FailedPreconditionError as e:
        if "Input dataset was expected to contain" not in e.message:
            raise
        raise UserError(
            "--stream_shard=file: this worker's files hold no training examples (fewer files "
            "than workers, or empty ones); give every worker at least one file of examples, "
            "or drop the flag"
        ) from None
    except tf.errors.InvalidArgumentError as e:
        found = _FOUND.search(e.message)
        if not found:
            raise
        said, index, what = (part.replace("\\'", "'") for part in found.groups())
        raise UserError(f"{said} {int(index):,} {what}; fix it in load_data()") from None
