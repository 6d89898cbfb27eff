"""The one rule for which rows each replica and worker read."""

import numpy as np
import pytest
import tensorflow as tf

from tf_mgpu.engine.input.share import Share, rows


def context(pipelines: int, pipeline: int, replicas: int) -> tf.distribute.InputContext:
    return tf.distribute.InputContext(pipelines, pipeline, replicas)


@pytest.mark.parametrize(("pipelines", "replicas"), [(1, 1), (1, 2), (2, 2), (2, 4), (3, 3)])
def test_every_pipelines_replicas_tile_each_global_batch_once_in_order(pipelines, replicas):
    global_batch, steps = 12, 3
    shares = [Share.of(context(pipelines, p, replicas), global_batch) for p in range(pipelines)]
    for step in range(steps):
        # Replica r of all, in order, whichever pipeline serves it: one device's batch.
        taken = []
        for share in shares:
            for t in range(step * share.here, (step + 1) * share.here):
                taken.append(share.positions(tf.constant(t, tf.int64)).numpy())
        expected = np.arange(step * global_batch, (step + 1) * global_batch)
        np.testing.assert_array_equal(np.concatenate(taken), expected)


def test_a_replica_reads_the_same_rows_through_the_step_and_through_its_pipeline():
    share = Share.of(context(2, 1, 4), 16)  # replicas 2 and 3 of 4, 4 examples each
    assert (share.first, share.here, share.per_replica, share.layout) == (2, 2, 4, "2x2")
    by_pipeline = share.positions(tf.constant(5, tf.int64)).numpy()  # step 2, its second replica
    by_step = rows(tf.constant(2, tf.int64), tf.constant(3, tf.int64), 16, 4).numpy()
    np.testing.assert_array_equal(by_pipeline, by_step)
    np.testing.assert_array_equal(by_step, [44, 45, 46, 47])
