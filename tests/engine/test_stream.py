"""A tf.data split, streamed: read again each epoch (never held), the same order on any
number of pipelines, reproducible from the seed, and resumable mid-epoch exactly."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine import stream
from tf_mgpu.errors import UserError

SIZE = 100  # examples; labels are their indices


def numbered(size: int = SIZE) -> stream.Stream:
    x = np.arange(size, dtype=np.float32)[:, None]
    return stream.scan(tf.data.Dataset.from_tensor_slices((x, np.arange(size))), "t", "train")


def labels(dataset: tf.data.Dataset) -> list[list[int]]:
    return [batch[1].tolist() for batch in dataset.as_numpy_iterator()]


def test_a_scan_counts_and_checks_without_keeping_the_data():
    found = numbered()
    assert len(found) == SIZE
    assert found.label_range == (0.0, SIZE - 1.0, True)
    assert found.nonfinite == {"x": 0}
    assert found.take(slice(0, 3)).y.tolist() == [0, 1, 2]
    empty = tf.data.Dataset.from_tensor_slices((np.zeros((0, 1)), np.zeros(0)))
    with pytest.raises(UserError, match="the train dataset is empty"):
        stream.scan(empty, "t", "train")


def pipeline(seed: int, pipelines: int = 1, index: int = 0, replicas: int = 1) -> list[list[int]]:
    """Labels of each step of 3 epochs at a global batch of 10 for one of `pipelines`,
    its `replicas` replicas' parts in order."""
    context = tf.distribute.InputContext(pipelines, index, replicas)
    epochs = [stream.worker_steps(numbered(), 10, seed, e, context) for e in range(3)]
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
