"""A tf.data split the user batched, as keras.io batches one for `fit`: read as its examples.

`Dataset.from_tensor_slices((x, y)).shuffle(n).map(f).batch(32).prefetch(k)` yields
batches, while tf_mgpu batches at its own global batch (N replicas == one device, and
the epoch order is the engine's). Such a dataset is unbatched here, before anything
else reads it (`tf_mgpu.engine.input.stream.scan`), and the chief says so at start.

What counts as batched, so that no dataset of unbatched examples is ever cut apart
(an autoencoder's x and y both of shape (784,) look like a batch of 784 by their shapes
alone): its elements come from a `batch()` (a `_BatchDataset` or `_ParallelBatchDataset`,
TensorFlow's own classes), through transformations that keep each element one batch (map,
prefetch, shuffle, cache, filter, take, skip...), and every tensor of an element has that
batch as its leading dimension (None, or the batch size for `drop_remainder=True`). A
`padded_batch`, a `rebatch` or anything else is left as it is (tf_mgpu then says what shape
it found). The model's inputs check the result when the model is built
(`tf_mgpu.engine.input.checks.check_inputs`).

The examples are the ones the user's batches hold: all of them with a final partial
batch, none of a partial batch `drop_remainder=True` dropped. Their number is known
without reading when the batch's input has a known length and only transformations that
keep every example follow it; else `scan` reads the dataset once to count them.
"""

import dataclasses

import tensorflow as tf

from tf_mgpu import internals


@dataclasses.dataclass(frozen=True)
class Batched:
    """How the user batched a split: `size` examples a batch, and whether a final partial
    batch was dropped (`drop_remainder`)."""

    size: int
    drop_remainder: bool

    def describe(self) -> str:
        return f"by {self.size}" + (", drop_remainder=True" if self.drop_remainder else "")


def batching(dataset: tf.data.Dataset) -> tuple[Batched, int | None] | None:
    """(how `dataset` is batched, how many examples it yields if known without reading),
    or None if it is not batched (see the module's docstring)."""
    node, counted = dataset, True
    while (kind := type(node).__name__) not in internals.BATCHES:
        if kind not in internals.KEEP_BATCHES or len(internals.dataset_inputs(node)) != 1:
            return None
        counted = counted and kind in internals.KEEP_COUNT
        node = internals.dataset_inputs(node)[0]
    size, drop = (tf.get_static_value(t) for t in internals.batch_arguments(node))
    if size is None or drop is None:
        return None
    batched = Batched(int(size), bool(drop))
    if not _leads_every_tensor(dataset.element_spec, batched.size):
        return None
    inside = int(internals.dataset_inputs(node)[0].cardinality())
    if not counted or inside < 0:
        return batched, None
    return batched, inside - inside % batched.size if batched.drop_remainder else inside


def _leads_every_tensor(spec, size: int) -> bool:
    """Whether every tensor of an element has a leading dimension of the batch's size."""
    shapes = [s.shape for s in tf.nest.flatten(spec)]
    return bool(shapes) and all(
        shape.rank is not None and shape.rank >= 1 and shape[0] in (None, size) for shape in shapes
    )


def unbatched(dataset: tf.data.Dataset) -> tuple[tf.data.Dataset, Batched | None]:
    """`dataset` as its examples, and how it was batched; itself and None if it is not."""
    found = batching(dataset)
    if found is None:
        return dataset, None
    batched, examples = found
    examples_of = dataset.unbatch()
    if examples is not None:  # known without reading: the run starts without a pass
        examples_of = examples_of.apply(tf.data.experimental.assert_cardinality(examples))
    return examples_of, batched
