"""Every private TensorFlow and Keras name tf_mgpu reads, here and nowhere else.

Each has no public equivalent (the docstrings say why it is read). A version that
renamed one raises `RenamedError`, naming what is missing and the versions tested
(`TESTED`, the bounds in pyproject.toml), instead of an AttributeError deep in a
step or, worse, a default that silently changes the maths.
tests/test_internals.py reads each name on the installed versions, so an upgrade
means editing this module and its tests, and pyproject.toml's bounds.
"""

import keras
import tensorflow as tf

# What CI installs and tests (pyproject.toml's bounds).
TESTED = {"tensorflow": "2.21", "keras": "3.15"}


class RenamedError(RuntimeError):
    """A private name tf_mgpu reads is missing from the installed TensorFlow or Keras."""


def _read(owner, name: str, where: str, package: str = "keras"):
    try:
        return getattr(owner, name)
    except AttributeError:
        version = keras.__version__ if package == "keras" else tf.__version__
        raise RenamedError(
            f"tf_mgpu reads {where}.{name}, which {package} {version} does not have; "
            f"tf_mgpu is tested with {package} {TESTED[package]}: "
            f"pip install '{package}=={TESTED[package]}.*'"
        ) from None


# -- Keras -----------------------------------------------------------------------------


def compiled_metrics(model: keras.Model) -> tuple:
    """compile's `metrics` and `weighted_metrics` exactly as the user passed them (None, a
    list, a dict...). Keras keeps them as passed only here; `get_compile_config`'s
    serialized form loses functions that are not registered."""
    holder = _read(model, "_compile_metrics", "keras.Model")
    if holder is None:  # compiled without metrics
        return None, None
    where = "keras.Model._compile_metrics"
    return _read(holder, "_user_metrics", where), _read(holder, "_user_weighted_metrics", where)


def compiled_holders(model: keras.Model) -> list:
    """The objects holding compile's loss and metrics (`CompileLoss`, `CompileMetrics`),
    those the model has. Keras builds them on their first use; a model with no call() of its
    own leaves that to its train_step, on each replica, where a mirrored variable cannot be
    made (tf_mgpu builds them first, `engine/state/lazy_state.py`)."""
    names = ("_compile_loss", "_compile_metrics")
    holders = [_read(model, name, "keras.Model") for name in names]
    return [h for h in holders if h is not None]


def global_seed_generator():
    """The SeedGenerator keras.random draws from when given no seed (a VAE's sampling layer,
    as keras.io writes it), or None before its first draw. Keras keeps it in a thread-local
    global, made on the first draw of each thread: MirroredStrategy runs each replica in a
    thread of its own, where a draw would make it inside the step, unmirrored ("Unable to
    lift tensor ... seed_generator_state"; Keras's fit fails there too). tf_mgpu makes one in
    the scope and hands it to the replicas' threads (`engine/state/unseeded.py`)."""
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    name = _read(seed_generator, "GLOBAL_SEED_GENERATOR", "keras.src.random.seed_generator")
    return global_state.get_global_attribute(name)


def set_global_seed_generator(generator) -> None:
    """Makes `generator` this thread's unseeded keras.random generator (None: made afresh
    on the next draw)."""
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    name = _read(seed_generator, "GLOBAL_SEED_GENERATOR", "keras.src.random.seed_generator")
    global_state.set_global_attribute(name, generator)


def keras_mask(output):
    """The mask Keras attached to a model's output (`Embedding(mask_zero=True)` and the layers
    that carry it on), or None. A loss reads it to leave the padded positions out and
    average over the unmasked ones; Keras's public API only sets it (`compute_mask`)."""
    return getattr(output, "_keras_mask", None)


def compiled_loss_weights(model: keras.Model):
    """compile's `loss_weights` as given (None, a number, a list or a dict). A missing
    name raises: read with a default, a renamed one would drop the weights silently."""
    holder = _read(model, "_compile_loss", "keras.Model")
    if holder is None:  # not compiled with a loss
        return None
    return _read(holder, "_user_loss_weights", "keras.Model._compile_loss")


def wrapped_function(metric: keras.metrics.MeanMetricWrapper):
    """The function a `MeanMetricWrapper` averages (compile's `metrics=[my_function]`); Keras
    keeps it only here."""
    return _read(metric, "_fn", "keras.metrics.MeanMetricWrapper")


def learning_rate(optimizer: keras.optimizers.Optimizer):
    """The compiled rate as given: the float variable, a schedule or a callable. The public
    `learning_rate` evaluates a schedule at the current step instead."""
    return _read(optimizer, "_learning_rate", f"keras.optimizers.{type(optimizer).__name__}")


def sublayers(layer: keras.Layer) -> list[keras.Layer]:
    """Every layer `layer` holds, at any depth: a functional model's, and those a layer of
    the user's own makes in its __init__ (a block holding its BatchNormalization), which
    `model.layers` does not list. Keras walks them so itself (to save, to track losses)."""
    return _read(layer, "_flatten_layers", "keras.Layer")(include_self=False, recursive=True)


def input_signature(model: keras.Model):
    """The input signature Keras's own `model.export` serves (a functional model's one
    positional argument of its inputs' structure, a subclassed model's recorded shapes):
    `keras.export.ExportArchive` takes one, and Keras computes it only in private code."""
    from keras.src.export import export_utils

    return _read(export_utils, "get_input_signature", "keras.src.export.export_utils")(model)


# -- tf.data ----------------------------------------------------------------------------

# TensorFlow's classes of `dataset.batch()`, and of transformations after a batch whose
# elements stay one batch each; of those, the ones that keep every example.
BATCHES = ("_BatchDataset", "_ParallelBatchDataset")
KEEP_COUNT = (
    "_MapDataset",
    "_ParallelMapDataset",
    "_PrefetchDataset",
    "_ShuffleDataset",
    "CacheDataset",
    "_MemoryCacheDataset",
    "_OptionsDataset",
    "_AssertCardinalityDataset",
)
KEEP_BATCHES = (
    *KEEP_COUNT,
    "_FilterDataset",
    "_TakeDataset",
    "_SkipDataset",
    "_ShardDataset",
    "_IgnoreErrorsDataset",
)


def dataset_inputs(dataset: tf.data.Dataset) -> list:
    """The datasets `dataset` transforms (tf.data has no public graph walk)."""
    return _read(dataset, "_inputs", "tf.data.Dataset", "tensorflow")()


def batch_arguments(dataset: tf.data.Dataset) -> tuple:
    """(batch_size, drop_remainder) of a `batch()` dataset, as tensors."""
    where = "tf.data " + type(dataset).__name__
    return (
        _read(dataset, "_batch_size", where, "tensorflow"),
        _read(dataset, "_drop_remainder", where, "tensorflow"),
    )


def auto_shard_by_file(dataset: tf.data.Dataset, pipelines: int, pipeline: int, replicas: int):
    """`dataset` with tf.distribute's file-sharding rewrite applied: this input pipeline
    reads only its own files. TensorFlow exposes the rewrite only inside
    `experimental_distribute_dataset`, which cannot feed a checkpointed iterator."""
    from tensorflow.python.data.experimental.ops import distribute

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
    where = "tf.data.experimental.ops.distribute"
    make = _read(distribute, "_AutoShardDataset", where, "tensorflow")
    return make(dataset.with_options(options), pipelines, pipeline, replicas)


# -- Slurm ------------------------------------------------------------------------------


def slurm_tasks_per_node(text: str) -> list[int]:
    """Slurm's tasks per node ("2(x3),1" -> [2, 2, 2, 1]) as TensorFlow's
    SlurmClusterResolver parses it, so tf_mgpu's count is the resolver's."""
    from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver

    where = "tf.distribute.cluster_resolver.slurm_cluster_resolver"
    return _read(slurm_cluster_resolver, "expand_tasks_per_node", where, "tensorflow")(text)


# -- The coordination service ------------------------------------------------------------


def report_error_to_cluster(message: str) -> None:
    """Hands `message` to every other task through TensorFlow's coordination service, which
    aborts their pending collectives with it (tf_mgpu.failures). Only the eager context
    exposes it; tf.distribute has no public call."""
    from tensorflow.python.eager import context

    where = "tensorflow.python.eager.context.Context"
    report = _read(context.context(), "report_error_to_cluster", where, "tensorflow")
    report(tf.errors.ABORTED, message)
