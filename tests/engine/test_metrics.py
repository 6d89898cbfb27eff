"""Loss and metric sums across replicas."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy
from tf_mgpu.engine import metrics

ACCURACY = {"accuracy": keras.metrics.sparse_categorical_accuracy}


@pytest.mark.parametrize("replicas", [1, 4])
def test_result_sums_every_replica_and_skips_weight_zero(replicas):
    strategy = cpu_strategy(replicas)
    with strategy.scope():
        sums = metrics.Sums("test", ACCURACY)

    def update():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        # Replica r holds 2 examples with loss r and 1, both right, plus one padding
        # example (weight 0) that is wrong and has a huge loss.
        loss = tf.stack([tf.cast(replica, tf.float32), 1.0, 1000.0])
        logits = tf.constant([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
        labels = tf.constant([1, 0, 1])
        sums.update(loss, labels, logits, tf.constant([1.0, 1.0, 0.0]))

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
        sums = metrics.Sums("plain", ACCURACY)
    logits = np.array([[2.0, 1.0], [0.0, 3.0], [5.0, 0.0], [0.0, 1.0]], np.float32)
    sums.update(tf.zeros(4), tf.constant([0, 1, 1, 1]), logits)
    assert sums.result()["accuracy"] == 0.75


def test_every_metric_is_summed_and_the_checkpoint_order_is_loss_metrics_count():
    with tf.distribute.get_strategy().scope():
        sums = metrics.Sums("x", {"a": lambda y, p: y, "b": lambda y, p: 2 * p})
    sums.update(tf.constant([1.0, 3.0]), tf.constant([1.0, 0.0]), tf.constant([0.5, 0.5]))
    assert sums.result() == pytest.approx({"loss": 2.0, "a": 0.5, "b": 1.0, "examples": 2})
    assert [v.name.split(":")[0] for v in sums.variables()] == ["x_loss", "x_a", "x_b", "x_count"]


def identity(y, y_pred):
    return y


@pytest.mark.parametrize("replicas", [1, 4])
def test_a_weighted_mean_is_sum_of_value_weight_padding_over_sum_of_weight_padding(replicas):
    strategy = cpu_strategy(replicas)
    with strategy.scope():
        sums = metrics.Sums("w", {"plain": identity, "weighted": metrics.Weighted(identity)})

    def update():
        replica = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        # Replica r: values r and 1 with sample weights 2 and 1, then padding (weight 0)
        # of value 1000 and sample weight 5, which must count for nothing.
        values = tf.stack([replica, 1.0, 1000.0])
        sums.update(tf.zeros(3), values, values, tf.constant([1.0, 1.0, 0.0]), w=[2.0, 1.0, 5.0])

    strategy.run(tf.function(update))
    ranks = sum(range(replicas))
    assert sums.result() == pytest.approx(
        {
            "loss": 0.0,
            "plain": (ranks + replicas) / (2 * replicas),
            "weighted": (2 * ranks + replicas) / (3 * replicas),
            "examples": 2 * replicas,
        }
    )
    names = [v.name.split(":")[0] for v in sums.variables()]
    assert names == ["w_loss", "w_plain", "w_weighted", "w_count", "w_sample_weight"]


def test_without_sample_weights_a_weighted_mean_is_the_mean_and_zero_weights_give_zero():
    with tf.distribute.get_strategy().scope():
        sums = metrics.Sums("w", {"plain": identity, "weighted": metrics.Weighted(identity)})
    sums.update(tf.zeros(2), tf.constant([1.0, 4.0]), tf.zeros(2))
    assert sums.result() == pytest.approx(
        {"loss": 0.0, "plain": 2.5, "weighted": 2.5, "examples": 2}
    )
    sums.reset()
    sums.update(tf.zeros(2), tf.constant([1.0, 4.0]), tf.zeros(2), w=tf.zeros(2))
    assert sums.result()["weighted"] == 0.0  # as Keras's divide_no_nan


class Largest(keras.metrics.Metric):
    """A user's metric whose state is a maximum: summing the replicas' states is wrong."""

    def __init__(self, name="largest", **kwargs):
        super().__init__(name=name, **kwargs)
        self.largest = self.add_variable(shape=(), name="largest", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):  # ignores sample weights
        self.largest.assign(keras.ops.maximum(self.largest, keras.ops.max(y_pred)))

    def result(self):
        return self.largest


def _largest_sums(strategy):
    with strategy.scope():
        sums = metrics.Sums("train", {"largest": Largest()})
        sums.build(tf.constant([0]), tf.constant([[0.0]]))
    return sums


def _update_largest(strategy, sums, scale: float):
    def update():
        # Replica r predicts scale x (r + 1), and a padding example (weight 0) 1000.
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        value = scale * tf.cast(replica + 1, tf.float32)
        sums.update(
            tf.zeros([2]),
            tf.constant([0, 0]),
            tf.stack([[value], [1000.0]]),
            tf.constant([1.0, 0.0]),
        )

    strategy.run(tf.function(update))


def test_a_metric_of_the_users_own_is_gathered_and_resumes_on_another_layout(tmp_path):
    assert metrics.additive(keras.metrics.AUC())
    assert not metrics.additive(Largest())
    four = cpu_strategy(4)
    sums = _largest_sums(four)
    _update_largest(four, sums, 1.0)
    # The largest over every replica's real examples: not their sum (10), nor padding's.
    assert sums.result()["largest"] == 4.0
    path = tf.train.Checkpoint(sums=sums.variables()).write(str(tmp_path / "ckpt"))
    two = cpu_strategy(2)
    resumed = _largest_sums(two)
    tf.train.Checkpoint(sums=resumed.variables()).read(path).assert_existing_objects_matched()
    resumed.restored()
    assert resumed.result()["largest"] == 4.0  # not 4 x 4 / 2, a sum's restore
    _update_largest(two, resumed, 3.0)
    assert resumed.result()["largest"] == 6.0
    resumed.reset()
    _update_largest(two, resumed, 0.5)
    assert resumed.result()["largest"] == 1.0  # the reset emptied every replica's state
