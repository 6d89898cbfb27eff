"""A tf.data split of files: each worker's place in it saved with every checkpoint and
restored instead of re-read, and each worker given its own files (--stream_shard=file)."""

import os
import pathlib
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import FILES
from tests.test_launch import RUN_BOUND, Launched, mid_training, summary
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import stream, stream_checks, stream_shard
from tf_mgpu.engine.step import stream_train
from tf_mgpu.errors import UserError

TASK = str(FILES / "tfrecord_files.py")
SHARDS, PER_SHARD = 4, 96  # training files and examples in each


def write_records(folder: pathlib.Path) -> pathlib.Path:
    """Train and test TFRecord shards of a learnable 4-class problem; x[0] of a training
    example is its file's number, x[1] its number in the file."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(8, 4))
    for name, shards in (("train", SHARDS), ("test", 1)):
        for shard in range(shards):
            with tf.io.TFRecordWriter(str(folder / f"{name}-{shard:02d}.tfrecord")) as out:
                for i in range(PER_SHARD):
                    x = rng.normal(size=8).astype(np.float32)
                    x[:2] = shard, i
                    feature = {
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                        "y": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[int(np.argmax(x @ teacher))])
                        ),
                    }
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    out.write(example.SerializeToString())
    return folder


@pytest.fixture
def records(tmp_path, monkeypatch):
    folder = write_records(tmp_path / "records")
    monkeypatch.setenv("TFRECORD_DIR", str(folder))  # the task file reads it; workers inherit
    return folder


def task_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tfrecord_files", TASK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_file_sharding_gives_each_worker_its_own_files_and_together_every_example(records):
    train, _ = task_module().load_data()
    split = stream.scan(train, "t", "train")
    seen = {}
    for worker in range(2):
        context = tf.distribute.InputContext(2, worker, 2)
        steps = stream_shard.worker_steps(split, 16, 3, 0, context, shard="file")
        rows = [row for ((x, _y),) in steps.as_numpy_iterator() for row in x[:, :2].tolist()]
        seen[worker] = {tuple(map(int, row)) for row in rows}
        assert len(rows) == len(seen[worker])  # once each within the epoch
    files = [{shard for shard, _ in seen[w]} for w in range(2)]
    assert files[0].isdisjoint(files[1])
    assert files[0] | files[1] == set(range(SHARDS))
    # 384 examples, 24 steps of 16: each worker reads 8 per step, all of its 192.
    assert len(seen[0] | seen[1]) == SHARDS * PER_SHARD


def test_file_sharding_of_arrays_is_one_line():
    class Arrays:
        @staticmethod
        def build_model():
            return task_module().build_model()

        @staticmethod
        def load_data():
            x, y = np.zeros((32, 8), np.float32), np.zeros(32, np.int64)
            return (x, y), (x, y)

    with pytest.raises(UserError, match="--stream_shard=file gives each worker its own files"):
        training.run(
            Config(epochs=1, stream_shard="file"), Arrays(), strategy=support.cpu_strategy(1)
        )


@pytest.mark.cluster
def test_two_file_sharded_workers_killed_mid_epoch_resume_to_the_same_weights(tmp_path, records):
    def args(model_dir):
        return [
            "--workers=2",
            "--max_restarts=1",
            "--",
            f"--task={TASK}",
            "--stream_shard=file",
            "--batch_size=16",
            "--epochs=3",
            "--steps_per_loop=4",
            "--checkpoint_steps=4",
            "--startup_timeout=120",
            f"--model_dir={model_dir}",
        ]

    reference = Launched(args(tmp_path / "ref")[:1] + args(tmp_path / "ref")[2:], tmp_path / "r")
    reference = reference.wait(RUN_BOUND)
    assert reference.returncode == 0, reference.tail()
    assert "each worker reads only its own files" in reference.stdout, reference.tail()
    model_dir = tmp_path / "model"
    running = Launched(args(model_dir), tmp_path / "logs")
    try:
        support.wait_until(
            lambda: any(s % 12 for s in support.checkpoint_steps(model_dir)),
            180,
            "a checkpoint mid-epoch",
        )
        assert mid_training(model_dir)
        os.killpg(running.starts()[-1]["worker:1"], signal.SIGKILL)
        done = running.wait(RUN_BOUND)
    finally:
        running.wait(0)
    assert done.returncode == 0, done.tail()
    assert "; the data from its saved iterator" in done.stdout, done.tail()
    resumed, uninterrupted = summary(model_dir), summary(tmp_path / "ref")
    assert resumed["weights_sha256"] == uninterrupted["weights_sha256"], done.tail()
    assert resumed["test_loss"] == uninterrupted["test_loss"]


def _loop(dataset: tf.data.Dataset, strategy, shard: str = "example"):
    """A tf.data split's training loop whose replica step only reads its batch."""
    split = stream.scan(dataset, "t", "train")
    return stream_train.for_split(
        strategy,
        lambda x, y: tf.reduce_all(tf.math.is_finite(x)),
        split,
        global_batch=4,
        seed=0,
        shard=shard,
        preprocess=lambda x: x,
        scope="none",
        steps=len(split) // 4,
    )


def next_step(loop) -> list:
    """The labels of the next step the loop would train on."""
    return [part[1].numpy().tolist() for part in loop._iterator.get_next()]


def test_a_saved_iterator_resumes_exactly_and_only_on_its_own_layout(tmp_path):
    data = tf.data.Dataset.from_tensor_slices((np.arange(32, dtype=np.float32), np.arange(32)))
    two = support.cpu_strategy(2)
    saved = _loop(data, two)
    saved.run(0, 0, 3)
    saved.save(str(tmp_path / "ckpt-3"))
    assert list(tmp_path.glob("ckpt-3.input-0-of-1x2-example.index"))
    restored = _loop(data, two)
    assert restored.restore(str(tmp_path / "ckpt-3")) == "the data from its saved iterator"
    restored.run(0, 3, 0)  # builds the epoch's iterator, restored, and runs no step
    expected = next_step(saved)
    assert next_step(restored) == expected  # the step the uninterrupted run takes next
    other = _loop(data, support.cpu_strategy(1))  # another layout: its own name
    assert "re-reading" in other.restore(str(tmp_path / "ckpt-3"))
    other.run(0, 3, 0)  # the epoch re-read and 3 steps skipped: the same examples
    assert sorted(next_step(other)[0]) == sorted(expected[0] + expected[1])


def test_a_dataset_whose_iterator_cannot_be_saved_resumes_by_re_reading(tmp_path):
    spec = (tf.TensorSpec((), tf.float32), tf.TensorSpec((), tf.int64))
    # More than the shuffle buffer holds: an exhausted generator would have no state left.
    size = stream.SHUFFLE_BUFFER + 100
    generated = tf.data.Dataset.from_generator(
        lambda: ((np.float32(i), i) for i in range(size)), output_signature=spec
    ).apply(tf.data.experimental.assert_cardinality(size))
    loop = _loop(generated, support.cpu_strategy(1))
    loop.run(0, 0, 3)
    loop.save(str(tmp_path / "ckpt-3"))  # PyFunc is stateful: nothing written, no error
    assert not loop.saveable
    assert not list(tmp_path.iterdir())
    assert "re-reading" in _loop(generated, support.cpu_strategy(1)).restore(
        str(tmp_path / "ckpt-3")
    )


def test_files_that_cannot_be_sharded_or_leave_a_worker_nothing_are_one_line(records):
    context = tf.distribute.InputContext(2, 1, 2)
    numbers = stream.scan(
        tf.data.Dataset.from_tensor_slices((np.zeros((8, 2), np.float32), np.zeros(8))), "t", "x"
    )
    with pytest.raises(UserError, match="found no file reader to shard"), stream_checks.reraise():
        stream_shard.worker_steps(numbers, 4, 0, 0, context, shard="file")
    one_file = tf.data.TFRecordDataset(str(records / "test-00.tfrecord")).map(task_module()._parse)
    lonely = stream.scan(one_file.apply(tf.data.experimental.assert_cardinality(96)), "t", "x")
    steps = stream_shard.worker_steps(lonely, 4, 0, 0, context, shard="file")
    said = "this worker's files hold no training examples"
    with pytest.raises(UserError, match=said), stream_checks.reraise():
        next(iter(steps))
