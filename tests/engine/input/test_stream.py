"""A tf.data split, streamed: read again each epoch (never held), the same order on any
number of pipelines, reproducible from the seed, and resumable mid-epoch exactly."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import FILES, two_workers_and_one_device
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import stream, stream_shard
from tf_mgpu.errors import UserError

SIZE = 100  # examples; labels are their indices


def numbered(size: int = SIZE, known: bool = True) -> stream.Stream:
    """`size` examples; `known`: of known length (checked as read), else scanned."""
    x = np.arange(size, dtype=np.float32)[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((x, np.arange(size)))
    if not known:
        dataset = dataset.filter(lambda x, y: True)  # its length unknown until read
    return stream.scan(dataset, "t", "train")


def labels(dataset: tf.data.Dataset) -> list[list[int]]:
    return [batch[1].tolist() for batch in dataset.as_numpy_iterator()]


def test_a_scan_counts_and_checks_without_keeping_the_data():
    found = numbered(known=False)
    assert len(found) == SIZE
    assert found.label_range == (0.0, SIZE - 1.0, True)
    assert found.nonfinite == {"x": 0}
    assert found.take(slice(0, 3)).y.tolist() == [0, 1, 2]
    empty = tf.data.Dataset.from_tensor_slices((np.zeros((0, 1)), np.zeros(0)))
    for dataset in (empty, empty.filter(lambda x, y: True)):
        with pytest.raises(UserError, match="the train dataset is empty"):
            stream.scan(dataset, "t", "train")
    known = numbered()  # nothing read: its length is known, and it is checked as read
    assert (len(known), known.checked_as_read, known.label_range) == (SIZE, True, None)


def pipeline(seed: int, pipelines: int = 1, index: int = 0, replicas: int = 1) -> list[list[int]]:
    """Labels of each step of 3 epochs at a global batch of 10 for one of `pipelines`,
    its `replicas` replicas' parts in order."""
    context = tf.distribute.InputContext(pipelines, index, replicas)
    epochs = [stream_shard.worker_steps(numbered(), 10, seed, e, context) for e in range(3)]
    return [
        [y for part in step for y in part[1].tolist()]
        for epoch in epochs
        for step in epoch.as_numpy_iterator()
    ]


def test_pipelines_together_hold_each_step_of_one_pipeline_and_resume_exactly():
    seed, epochs, global_batch = 3, 3, 10
    one = pipeline(seed)
    assert len(one) == epochs * SIZE // global_batch
    for epoch in range(epochs):  # every example once per epoch, in a new order each epoch
        seen = sorted(x for batch in one[epoch * 10 : (epoch + 1) * 10] for x in batch)
        assert seen == list(range(SIZE))
    assert one[:10] != one[10:20]
    # Two pipelines of one replica each: step k's two halves are step k of one pipeline.
    halves = [pipeline(seed, 2, i, replicas=2) for i in range(2)]
    for step, batch in enumerate(one):
        assert sorted(halves[0][step] + halves[1][step]) == sorted(batch)
    # One pipeline of two replicas: the step's rows in the same order, cut in two.
    assert pipeline(seed, replicas=2) == one
    assert pipeline(seed) == one  # reproducible from the seed
    assert pipeline(seed + 1) != one


def test_evaluation_counts_every_example_once_with_padding_weighted_zero():
    context = tf.distribute.InputContext(2, 1, 2)
    batches = stream.eval_dataset(numbered(95), 20, context).take(5).as_numpy_iterator()
    seen = [(int(y), float(w)) for _, ys, ws in batches for y, w in zip(ys, ws, strict=True)]
    context = tf.distribute.InputContext(2, 0, 2)
    batches = stream.eval_dataset(numbered(95), 20, context).take(5).as_numpy_iterator()
    seen += [(int(y), float(w)) for _, ys, ws in batches for y, w in zip(ys, ws, strict=True)]
    assert sorted(y for y, w in seen if w == 1.0) == list(range(95))
    assert len([w for _, w in seen if w == 0.0]) == 5


def test_training_reads_the_dataset_each_epoch_instead_of_holding_it():
    reads = {"train": 0, "test": 0}

    def examples(split: str, count: int):
        def generate():
            reads[split] += 1
            rng = np.random.default_rng(0)
            for i in range(count):
                yield rng.normal(size=4).astype(np.float32), i % 3

        return generate

    class GeneratedTask:
        @staticmethod
        def build_model():
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
            model.compile(
                optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
            )
            return model

        @staticmethod
        def load_data():
            spec = (tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.int64))
            return tuple(
                tf.data.Dataset.from_generator(examples(split, count), output_signature=spec)
                for split, count in (("train", 64), ("test", 16))
            )

    for epochs in (1, 3):
        reads.update(train=0, test=0)
        config = Config(epochs=epochs, batch_size=8, steps_per_loop=2)
        result = training.run(config, GeneratedTask(), strategy=cpu_strategy(1))
        assert result.summary["config"]["input"] == "stream"
        assert result.summary["test_examples"] == 16
        # The training split exactly: one scan, one read of its first examples (to build
        # the model), then one pass per epoch. Held in memory, it would not grow with epochs.
        assert reads["train"] == 2 + epochs, (epochs, reads)


class KnownLength:
    """A task of 64 training examples of known length, read from a generator; `bad` maps
    an example's number to what replaces its (x, y)."""

    def __init__(self, bad: dict | None = None):
        self.bad, self.reads = bad or {}, 0

    @staticmethod
    def build_model():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        return model

    def load_data(self):
        def generate():
            self.reads += 1
            for i in range(64):
                x, y = np.full(4, i % 5, np.float32), i % 3
                yield self.bad.get(i, (x, y))

        spec = (tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.int64))
        train = tf.data.Dataset.from_generator(generate, output_signature=spec)
        train = train.apply(tf.data.experimental.assert_cardinality(64))
        test = tf.data.Dataset.from_tensor_slices((np.zeros((8, 4), np.float32), np.zeros(8)))
        return train, test


def test_a_dataset_of_known_length_is_not_read_before_training():
    task = KnownLength()
    result = training.run(Config(epochs=2, batch_size=8), task, strategy=cpu_strategy(1))
    assert result.summary["test_examples"] == 8
    assert task.reads == 1 + 2  # its first examples, to build the model, then each epoch


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ((np.array([0, np.nan, 0, 0], np.float32), 1), "example 37 holds NaN or inf in x;"),
        ((np.zeros(4, np.float32), 7), "example 37 has a label outside the model's 3 classes"),
    ],
    ids=["nan", "label"],
)
def test_a_bad_example_of_a_dataset_of_known_length_is_one_line_naming_it(bad, says):
    with pytest.raises(UserError, match="the train dataset's " + says):
        training.run(
            Config(epochs=1, batch_size=8), KnownLength({37: bad}), strategy=cpu_strategy(1)
        )


@pytest.mark.cluster
def test_an_unseeded_shuffle_on_two_workers_reads_every_example_once_per_epoch(tmp_path):
    """The user's `dataset.shuffle(256)` has no seed: each worker's load_data would shuffle
    otherwise, and the workers' shares of a global batch would overlap. Seeded from --seed
    before load_data, every worker reads the same order: the mean id is exactly 511.5 each
    epoch, and the run trains as one device does."""
    task = str(FILES / "shuffled_dataset.py")
    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=2)
    for record in cluster["history"]:
        assert record["train_mean_id"] == 511.5, record
    for mine, its in zip(cluster["history"], one.summary["history"], strict=True):
        assert mine["train_loss"] == pytest.approx(its["train_loss"], abs=1e-9)
