"""The loss and the model's compiled metrics, read over every replica."""

import keras
import pytest
import tensorflow as tf

from tests.keras.helpers import FILES, two_workers_and_one_device
from tests.support import cpu_strategy
from tf_mgpu.engine.model import metrics
from tf_mgpu.engine.model.compiled import build_compiled


def _compiled(strategy, metric_list) -> keras.Model:
    """A model compiled with `metric_list()`, made in the strategy's scope as a task's
    build_model makes it there (a metric made outside would not be distributed)."""
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
        model.compile(loss="sparse_categorical_crossentropy", metrics=metric_list())
        x = tf.zeros([2, 2])
        build_compiled(model, x, tf.constant([0, 0]), model(x))
    return model


def _measure(strategy, sums, y_pred_of, labels, real=(True, True, False)):
    """Each replica measures 3 examples, the last padding unless `real` says otherwise;
    `y_pred_of(replica)` gives its predictions."""

    def update():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        # Its mean loss is r + 1 over its 2 real examples.
        sums.add(tf.cast(replica + 1, tf.float32), 2)
        x = tf.zeros([3, 2])
        sums.measure(x, tf.constant(labels), y_pred_of(replica), real=tf.constant(real))

    strategy.run(tf.function(update))


@pytest.mark.parametrize("replicas", [1, 4])
def test_result_sums_every_replica_and_skips_padding(replicas):
    strategy = cpu_strategy(replicas)
    model = _compiled(strategy, lambda: ["accuracy"])
    with strategy.scope():
        sums = metrics.ModelMetrics(model, "test")
    assert not sums.gathered
    # Two right predictions, and padding that is wrong.
    logits = tf.constant([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    _measure(strategy, sums, lambda replica: logits, [1, 0, 1])
    expected_loss = sum(r + 1 for r in range(replicas)) / replicas
    assert sums.result() == pytest.approx(
        {"loss": expected_loss, "accuracy": 1.0, "examples": 2 * replicas}
    )
    assert sums.names() == ["loss", "accuracy"]
    sums.reset()
    _measure(strategy, sums, lambda replica: logits, [0, 0, 1])
    assert sums.result()["accuracy"] == 0.5, "reset did not clear every replica"


class Largest(keras.metrics.Metric):
    """The largest prediction seen: a state that is not a sum."""

    def __init__(self, name="largest", **kwargs):
        super().__init__(name=name, **kwargs)
        self.largest = self.add_variable(shape=(), name="largest", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):  # ignores sample weights
        self.largest.assign(keras.ops.maximum(self.largest, keras.ops.max(y_pred)))

    def result(self):
        return self.largest


def _largest(strategy):
    model = _compiled(strategy, lambda: [Largest()])
    with strategy.scope():
        return metrics.ModelMetrics(model, "train", keeps=True)


def _update_largest(strategy, sums, scale: float):
    # Replica r predicts scale x (r + 1), and a padding example 1000.
    def y_pred(replica):
        value = scale * tf.cast(replica + 1, tf.float32)
        return tf.stack([[value, 0.0], [0.0, 0.0], [1000.0, 0.0]])

    _measure(strategy, sums, y_pred, [0, 0, 0])


def test_a_metric_of_the_users_own_is_gathered_and_resumes_on_another_layout(tmp_path):
    assert metrics.additive(keras.metrics.AUC())
    assert not metrics.additive(Largest())
    four = cpu_strategy(4)
    sums = _largest(four)
    assert sums.gathered
    _update_largest(four, sums, 1.0)
    # The largest over every replica's real examples: not their sum (10), nor padding's.
    assert sums.result()["largest"] == 4.0
    path = tf.train.Checkpoint(sums=sums.variables()).write(str(tmp_path / "ckpt"))
    two = cpu_strategy(2)
    resumed = _largest(two)
    tf.train.Checkpoint(sums=resumed.variables()).read(path).assert_existing_objects_matched()
    resumed.restored()
    assert resumed.result()["largest"] == 4.0  # not 4 x 4 / 2, a sum's restore
    assert resumed.result()["loss"] == pytest.approx(2.5)  # the mean of 1, 2, 3, 4
    _update_largest(two, resumed, 3.0)
    assert resumed.result()["largest"] == 6.0
    resumed.reset()
    _update_largest(two, resumed, 0.5)
    assert resumed.result()["largest"] == 1.0  # the reset emptied every replica's state


def test_an_evaluation_between_does_not_change_the_kept_training_figures():
    strategy = cpu_strategy(2)
    model = _compiled(strategy, lambda: ["accuracy"])
    with strategy.scope():
        train = metrics.ModelMetrics(model, "train", keeps=True)
        test = metrics.ModelMetrics(model, "test")
    logits = tf.constant([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    _measure(strategy, train, lambda replica: logits, [1, 1, 1])
    assert train.result()["accuracy"] == 0.5
    # A stop while evaluating: the model's metrics now hold the evaluation's state.
    test.reset()
    _measure(strategy, test, lambda replica: logits, [1, 0, 0])
    assert test.result()["accuracy"] == 1.0
    train.restored()  # what a resume does with the checkpointed copy
    assert train.result()["accuracy"] == 0.5


@pytest.mark.cluster
def test_a_metric_of_the_users_own_with_a_tf_data_split_on_two_workers(tmp_path):
    """A state that is not a sum (a largest value) is gathered over every replica of every
    worker; with tf.data splits on 2 workers it reads what one device reads."""
    task = str(FILES / "own_metric_dataset.py")
    cluster, one = two_workers_and_one_device(tmp_path, task, epochs=1)
    expected = one.summary["history"][-1]
    for key in ("train_largest_logit", "test_largest_logit", "test_accuracy", "test_loss"):
        assert cluster["history"][-1][key] == pytest.approx(expected[key], abs=1e-9), key
