"""Random-access sources: a seeded permutation per epoch, each replica's share read alone,
instant resume by arithmetic, and every example checked as it is read; and a task whose
splits are such sources, trained on replicas and on workers, and killed."""

import dataclasses
import os
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import (
    FILES,
    FLOAT64,
    assert_same_weights,
    kill_mid_epoch_then_resume,
    load,
    one_and_two,
    two_workers_and_one_device,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.engine.input import source
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


# -- a task whose splits are read by index, trained ------------------------------------


def reads(folder: pathlib.Path) -> dict[str, list[int]]:
    """Each process's training rows read (memmap_source.py's log), by file."""
    return {
        path.name: [int(r) for r in path.read_text().split() if int(r) < 1024]
        for path in folder.glob("reads.*")
    }


def test_a_source_read_by_index_on_two_replicas_trains_like_one_device(tmp_path):
    task = load("memmap_source", LOG=str(tmp_path))
    one, two = one_and_two(task, dataclasses.replace(FLOAT64, epochs=2))
    assert_same_weights(one, two, atol=1e-10)
    assert one.summary["history"][-1]["train_examples"] == 1024
    # Each of the two runs reads every training example once per epoch (1024 = 32 global
    # batches of 32), and the first per-replica batch (16, or 32 on one device) a few more
    # times at start, to build the model: nothing scanned before training, nothing read
    # twice in an epoch.
    (train,) = reads(tmp_path).values()
    counts = np.bincount(train, minlength=1024)
    assert (counts[32:] == 2 * 2).all(), np.unique(counts[32:])
    assert (counts[:32] >= 2 * 2).all()


def test_a_bad_example_met_in_training_is_one_line_naming_its_index():
    task = load("memmap_source", BAD={700: (np.full(16, np.nan, np.float32), np.int64(0))})
    with pytest.raises(UserError, match="the train source's example 700 holds NaN or inf in x"):
        training.run(dataclasses.replace(FLOAT64, epochs=1), task, strategy=cpu_strategy(2))


@pytest.mark.cluster
def test_a_source_killed_mid_epoch_resumes_to_the_same_weights(tmp_path):
    args = [f"--task={FILES / 'memmap_source.py'}", "--batch_size=32"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32, after_epochs=1)


@pytest.mark.cluster
def test_two_workers_each_read_only_their_share_and_train_like_one_device(tmp_path, monkeypatch):
    task = str(FILES / "memmap_source.py")
    logs = tmp_path / "reads"
    logs.mkdir()
    monkeypatch.setenv("MEMMAP_READ_LOG", str(logs))  # the workers inherit it

    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=2)
    per_worker = {name: rows for name, rows in reads(logs).items() if name != own_log()}
    assert len(per_worker) == 2, per_worker.keys()
    # Over both workers, each training example once per epoch, plus the first per-replica
    # batch (16) each reads at start; so each worker reads about half.
    both = np.bincount([r for rows in per_worker.values() for r in rows], minlength=1024)
    assert (both[16:] == 2).all(), np.unique(both[16:])
    for name, rows in per_worker.items():
        assert len(rows) <= 0.55 * 2 * 1024, (name, len(rows))
    for key in ("train_loss", "val_loss", "test_loss", "test_accuracy"):
        expected = one.summary["history"][-1][key]
        assert cluster["history"][-1][key] == pytest.approx(expected, abs=1e-9), key


def own_log() -> str:
    """The name of this process's read log (the one-device run's, not a worker's)."""
    return f"reads.{os.getpid()}"


def test_sample_weights_are_read_as_given_and_a_negative_one_is_named():
    class Weighted(Reader):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x, y, np.array([-1.0 if i == 9 else 0.5])  # shape (1,): one number

    src = source.open_source(Weighted(20), "task t", "train")
    first = src.take(slice(0, 4))
    assert (first.x.shape, first.y.shape, first.w.shape) == ((4, 2), (4,), (4,))
    assert first.w.dtype == np.float32
    with pytest.raises(UserError, match=r"example 9 has sample_weight -1\.0; give weights >= 0"):
        src.take([9])


def test_a_keras_py_dataset_is_refused_its_items_are_batches():
    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.zeros((8, 2)), np.zeros(8)

    with pytest.raises(UserError, match="PyDataset, whose items are batches"):
        source.open_source(Batches(), "task t", "train")
