"""Random-access sources: a seeded permutation per epoch, each replica's share read alone,
instant resume by arithmetic, and every example checked as it is read."""

import numpy as np
import pytest
import tensorflow as tf

from tf_mgpu.engine import source
from tf_mgpu.errors import UserError


class Reader:
    """A user's reader: example i is (x = [i, i], y = i % 3); records what it read."""

    def __init__(self, n: int, bad: dict | None = None):
        self.n, self.bad, self.read = n, bad or {}, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.read.append(i)
        if i in self.bad:
            return self.bad[i]
        return np.array([i, i], np.float32), np.int64(i % 3)


def batches(src, pipelines: int, replicas: int, *, epochs=2, first_epoch=0, first_step=0):
    """Each (pipeline, local replica)'s batches of example indices, in order, at a global
    batch of 4 per replica."""
    got = {}
    here = replicas // pipelines
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, replicas)
        dataset = src.train_dataset(
            4 * replicas,
            seed=7,
            epochs=epochs,
            context=context,
            first_epoch=first_epoch,
            first_step=first_step,
        )
        for k, (x, _) in enumerate(dataset.as_numpy_iterator()):
            got.setdefault((pipeline, k % here), []).append(x[:, 0].astype(int).tolist())
    return got


def global_batches(got: dict) -> list[list[int]]:
    """Each step's global batch: the replicas' batches joined in replica order."""
    keys = sorted(got)
    return [[i for key in keys for i in got[key][k]] for k in range(len(got[keys[0]]))]


def test_each_epoch_is_a_permutation_and_replicas_on_workers_take_one_devices_batches():
    reader = Reader(50)
    src = source.open_source(reader, "task t", "train")
    one = global_batches(batches(src, pipelines=1, replicas=1))
    steps = 50 // 4
    first, second = one[:steps], one[steps:]
    assert len({i for batch in first for i in batch}) == steps * 4  # none twice in an epoch
    assert first != second  # two epochs differ
    assert global_batches(batches(src, 1, 1)) == one  # the same seed, the same order
    for pipelines, replicas in [(1, 2), (2, 2), (2, 4)]:
        single = _one_device(src, 4 * replicas)
        reader.read.clear()
        many = global_batches(batches(src, pipelines, replicas, epochs=1))
        assert many == single, (pipelines, replicas)
        # Over every worker, each example of the epoch read once (the last partial
        # global batch is dropped, as on one device).
        assert sorted(reader.read) == sorted(i for batch in single for i in batch)


def _one_device(src, global_batch: int) -> list[list[int]]:
    dataset = src.train_dataset(global_batch, 7, 1, tf.distribute.InputContext(1, 0, 1))
    return [x[:, 0].astype(int).tolist() for x, _ in dataset.as_numpy_iterator()]


def test_a_resumed_epoch_starts_at_its_step_without_reading_the_steps_before():
    reader = Reader(50)
    src = source.open_source(reader, "task t", "train")
    whole = batches(src, 1, 2, epochs=2)
    reader.read.clear()
    resumed = batches(src, 1, 2, epochs=2, first_epoch=1, first_step=3)
    steps = 50 // 8
    for key in whole:
        assert resumed[key] == whole[key][steps + 3 :]
    assert len(reader.read) == (steps - 3) * 8  # the resumed steps' examples, nothing else


def read_every_example(src) -> None:
    for _ in src.eval_dataset(8, tf.distribute.InputContext(1, 0, 1)).take(7):
        pass


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ((np.zeros(2, np.float32),), "example 13 is a 1-tuple, but example 0 is a 2-tuple"),
        ((np.zeros(3, np.float32), np.int64(0)), "example 13 has x of shape (3,)"),
        ((np.array([np.nan, 0], np.float32), np.int64(0)), "example 13 holds NaN or inf in x"),
    ],
    ids=["arity", "shape", "nan"],
)
def test_a_bad_example_stops_the_read_with_one_line_naming_its_index(bad, says):
    src = source.open_source(Reader(50, {13: bad}), "--task=t.py", "train")
    with pytest.raises(UserError) as raised, source.reraise(src):
        read_every_example(src)
    assert str(raised.value).startswith(f"--task=t.py: the train source's {says}")


def test_an_exception_in_the_users_reader_comes_out_as_itself():
    class Broken(Reader):
        def __getitem__(self, i):
            if i == 21:
                raise KeyError("record 21 is missing from shard 3")
            return super().__getitem__(i)

    src = source.open_source(Broken(50), "task t", "train")
    with pytest.raises(KeyError, match="shard 3"), source.reraise(src):
        read_every_example(src)


def test_labels_outside_a_sparse_losss_classes_are_caught_as_read():
    src = source.open_source(Reader(50), "task t", "test")
    src.expect_classes(2)
    with (
        pytest.raises(UserError, match="example 2 has label 2, outside the model's 2"),
        source.reraise(src),
    ):
        read_every_example(src)


def test_evaluation_pads_to_whole_global_batches_with_weight_zero():
    src = source.open_source(Reader(10), "task t", "test")
    context = tf.distribute.InputContext(1, 0, 2)
    got = list(src.eval_dataset(8, context).take(4).as_numpy_iterator())
    xs = np.concatenate([x[:, 0] for x, _, _ in got])
    weights = np.concatenate([w for _, _, w in got])
    assert xs[:10].tolist() == list(range(10))
    assert weights.tolist() == [1.0] * 10 + [0.0] * 6
