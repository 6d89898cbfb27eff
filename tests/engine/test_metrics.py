"""Loss and accuracy sums across replicas."""

import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy
from tf_mgpu.engine import metrics


@pytest.mark.parametrize("replicas", [1, 4])
def test_result_sums_every_replica_and_skips_weight_zero(replicas):
    strategy = cpu_strategy(replicas)
    with strategy.scope():
        sums = metrics.Sums("test")

    def update():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        # Replica r holds 2 examples with loss r and 1, both right, plus one padding
        # example (weight 0) that is wrong and has a huge loss.
        loss = tf.stack([tf.cast(replica, tf.float32), 1.0, 1000.0])
        logits = tf.constant([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
        labels = tf.constant([1, 0, 1])
        sums.update(loss, logits, labels, tf.constant([1.0, 1.0, 0.0]))

    strategy.run(tf.function(update))
    expected_loss = (sum(range(replicas)) + replicas) / (2 * replicas)
    assert sums.result() == pytest.approx(
        {"loss": expected_loss, "accuracy": 1.0, "examples": 2 * replicas}
    )
    sums.reset()
    strategy.run(tf.function(update))
    assert sums.result()["examples"] == 2 * replicas, "reset did not clear every replica"


def test_accuracy_counts_argmax_hits():
    with tf.distribute.get_strategy().scope():
        sums = metrics.Sums("plain")
    logits = np.array([[2.0, 1.0], [0.0, 3.0], [5.0, 0.0], [0.0, 1.0]], np.float32)
    sums.update(tf.zeros(4), logits, tf.constant([0, 1, 1, 1]))
    assert sums.result()["accuracy"] == 0.75
