"""Every private TensorFlow and Keras name tf_mgpu reads (tf_mgpu/internals.py), read on the
installed versions: a version that renamed one fails here, with the message a user would
get, before any run does. The installed versions are the tested ones."""

import importlib.metadata

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import ROOT
from tf_mgpu import internals


def test_the_installed_versions_are_the_tested_ones_and_pyprojects_bounds():
    for package, version in internals.TESTED.items():
        assert importlib.metadata.version(package).startswith(version + "."), package
    text = (ROOT / "pyproject.toml").read_text()
    assert '"tensorflow>=2.21,<2.22"' in text
    assert '"keras>=3.15,<3.16"' in text


def test_a_missing_name_is_one_clear_message():
    with pytest.raises(internals.RenamedError, match=r"keras\.Model\._compile_metrics.*3\.15"):
        internals.compiled_metrics(object())


def test_keras_names():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert internals.compiled_metrics(model) == (None, None)  # not compiled
    assert internals.compiled_loss_weights(model) is None
    given = ["mae", keras.metrics.AUC()]
    model.compile(
        optimizer=keras.optimizers.SGD(0.25),
        loss="mse",
        loss_weights=0.5,
        metrics=given,
        weighted_metrics=["mse"],
    )
    assert internals.compiled_metrics(model) == (given, ["mse"])
    assert internals.compiled_loss_weights(model) == 0.5
    rate = internals.learning_rate(model.optimizer)
    assert float(keras.ops.convert_to_numpy(rate)) == 0.25
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    assert internals.learning_rate(keras.optimizers.SGD(schedule)) is schedule
    holders = internals.compiled_holders(model)
    assert [type(h).__name__ for h in holders] == ["CompileLoss", "CompileMetrics"]

    def first_error(y_true, y_pred):
        return keras.ops.abs(y_true - y_pred)[0]

    wrapper = keras.metrics.MeanMetricWrapper(first_error)
    assert internals.wrapped_function(wrapper) is first_error

    internals.set_global_seed_generator(None)
    keras.random.normal((2,))  # unseeded: Keras makes its generator on this first draw
    made = internals.global_seed_generator()
    assert isinstance(made, keras.random.SeedGenerator)
    keras.random.normal((2,))
    assert internals.global_seed_generator() is made
    internals.set_global_seed_generator(None)

    padded = keras.layers.Embedding(5, 2, mask_zero=True)(np.array([[3, 0]]))
    np.testing.assert_array_equal(internals.keras_mask(padded), [[True, False]])
    assert internals.keras_mask(keras.layers.Dense(1)(np.ones((1, 2)))) is None


def test_tf_data_names():
    examples = tf.data.Dataset.from_tensor_slices(np.arange(10))
    batched = examples.batch(4, drop_remainder=True)
    assert type(batched).__name__ in internals.BATCHES
    parallel = examples.batch(4, num_parallel_calls=2)
    assert type(parallel).__name__ in internals.BATCHES
    assert [int(t) for t in internals.batch_arguments(batched)] == [4, 1]
    (inside,) = internals.dataset_inputs(batched)
    assert int(inside.cardinality()) == 10
    # Every transformation the lists name, applied after a batch, is a class they name.
    after = {
        "map": batched.map(lambda x: x),
        "parallel map": batched.map(lambda x: x, num_parallel_calls=2),
        "prefetch": batched.prefetch(1),
        "shuffle": batched.shuffle(2),
        "cache": batched.cache(),
        "options": batched.with_options(tf.data.Options()),
        "assert_cardinality": batched.apply(tf.data.experimental.assert_cardinality(2)),
    }
    for name, dataset in after.items():
        assert type(dataset).__name__ in internals.KEEP_COUNT, name
    more = {
        "filter": batched.filter(lambda x: True),
        "take": batched.take(1),
        "skip": batched.skip(1),
        "shard": batched.shard(2, 0),
        "ignore_errors": batched.ignore_errors(),
    }
    for name, dataset in more.items():
        assert type(dataset).__name__ in internals.KEEP_BATCHES, name


def test_the_file_sharding_rewrite_gives_each_pipeline_its_own_files(tmp_path):
    paths = []
    for i in range(4):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            writer.write(str(i).encode())
        paths.append(path)
    files = tf.data.Dataset.from_tensor_slices(paths)
    dataset = files.interleave(tf.data.TFRecordDataset, cycle_length=1)
    second = internals.auto_shard_by_file(dataset, pipelines=2, pipeline=1, replicas=2)
    assert sorted(r.numpy() for r in second) == [b"1", b"3"]


def test_slurms_tasks_per_node_as_tensorflows_resolver_reads_them():
    assert internals.slurm_tasks_per_node("2(x3),1") == [2, 2, 2, 1]


def test_layers_at_any_depth_and_the_export_signature():
    @keras.saving.register_keras_serializable(package="test_internals")
    class Block(keras.layers.Layer):  # a layer of the user's own holding others
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(3)
            self.norm = keras.layers.BatchNormalization()

        def call(self, x):
            return self.norm(self.dense(x))

    inputs = keras.Input((2,), name="features")
    model = keras.Model(inputs, Block(name="block")(inputs))
    found = [type(layer).__name__ for layer in internals.sublayers(model)]
    assert {"Block", "Dense", "BatchNormalization"} <= set(found), found
    (spec,) = internals.input_signature(model)
    assert (tuple(spec.shape), spec.dtype) == ((None, 2), "float32")


def test_the_coordination_services_error_report_reaches_tensorflow():
    tf.constant(1)  # an initialized context; in one process, no coordination service
    with pytest.raises(tf.errors.FailedPreconditionError, match="Coordination service"):
        internals.report_error_to_cluster("tf_mgpu peer error: a line")
