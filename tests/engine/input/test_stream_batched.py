"""A tf.data split the user batched, read as its examples: which datasets count as batched,
and the examples they hold (a final partial batch kept, one drop_remainder dropped)."""

import numpy as np
import pytest
import tensorflow as tf

from tf_mgpu.engine.input import stream, stream_batched

SIZE = 100  # examples; labels are their indices


def examples(x_shape=(4,)) -> tf.data.Dataset:
    x = np.arange(SIZE * int(np.prod(x_shape)), dtype=np.float32).reshape(SIZE, *x_shape)
    return tf.data.Dataset.from_tensor_slices((x, np.arange(SIZE)))


def labels(dataset: tf.data.Dataset) -> list[int]:
    return [int(y) for _, y in dataset.as_numpy_iterator()]


def test_a_keras_io_pipeline_is_read_as_every_example_in_order():
    # As keras.io writes it; 100 examples by 32 end in a partial batch of 4.
    dataset = examples().map(lambda x, y: (x / 2, y)).batch(32).prefetch(tf.data.AUTOTUNE)
    unbatched, batched = stream_batched.unbatched(dataset)
    assert batched == stream_batched.Batched(32, drop_remainder=False)
    assert int(unbatched.cardinality()) == SIZE  # known: no pass before training
    assert labels(unbatched) == list(range(SIZE))
    assert unbatched.element_spec[0].shape == (4,)


def test_drop_remainder_keeps_only_the_examples_of_whole_batches():
    dataset = examples().shuffle(SIZE, seed=0).batch(32, drop_remainder=True).cache()
    unbatched, batched = stream_batched.unbatched(dataset)
    assert batched == stream_batched.Batched(32, drop_remainder=True)
    assert int(unbatched.cardinality()) == 96
    read = labels(unbatched)
    assert len(read) == len(set(read)) == 96  # 96 distinct examples: the last 4 dropped


def test_dicts_tuples_and_sample_weights_are_unbatched_alike():
    x = {"a": np.zeros((SIZE, 3), np.float32), "b": np.ones((SIZE, 2, 2), np.float32)}
    y = (np.arange(SIZE), np.zeros((SIZE, 1), np.float32))
    dataset = tf.data.Dataset.from_tensor_slices((x, y, np.ones(SIZE, np.float32)))
    unbatched, batched = stream_batched.unbatched(dataset.batch(10, num_parallel_calls=2))
    assert batched.size == 10
    assert unbatched.element_spec == dataset.element_spec
    assert int(unbatched.cardinality()) == SIZE


def test_after_a_filter_the_batch_is_found_and_its_examples_counted_by_reading():
    dataset = examples().batch(32).filter(lambda x, y: tf.shape(y)[0] == 32)
    found = stream.scan(dataset, "t", "train")
    assert found.batched == stream_batched.Batched(32, drop_remainder=False)
    assert not found.checked_as_read  # scanned: its length was unknown
    assert len(found) == 96


@pytest.mark.parametrize(
    "make",
    [
        lambda: examples(),
        lambda: examples().batch(32).unbatch(),
        lambda: examples().padded_batch(32),
        lambda: examples().batch(32).rebatch(16),
        lambda: examples().batch(32).map(lambda x, y: (x[0], y[0])),
        # An autoencoder's unbatched examples: x and y of one shape, no batch().
        lambda: tf.data.Dataset.from_tensor_slices((np.zeros((SIZE, 8)), np.zeros((SIZE, 8)))),
        lambda: tf.data.Dataset.zip(examples().batch(32), examples().batch(32)),
    ],
    ids=["unbatched", "unbatch", "padded_batch", "rebatch", "mapped_apart", "same_shapes", "zip"],
)
def test_nothing_else_counts_as_batched(make):
    dataset = make()
    unbatched, batched = stream_batched.unbatched(dataset)
    assert batched is None
    assert unbatched is dataset


def test_a_batched_split_streams_as_its_examples():
    found = stream.scan(examples().batch(32).prefetch(2), "t", "test")
    assert found.checked_as_read
    assert len(found) == SIZE
    assert found.shapes() == {"x": (4,), "y": ()}
    assert found.take(slice(0, 3)).y.tolist() == [0, 1, 2]
    plain = stream.scan(examples(), "t", "test")
    assert plain.batched is None
