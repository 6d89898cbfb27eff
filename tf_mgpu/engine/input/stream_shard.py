"""This worker's share of a tf.data split's epoch, one element per step.

`--stream_shard=example` (the default) keeps, on every worker, its replicas'
share of each global batch of the shuffled epoch, so N replicas on M workers
train exactly like one device; `--stream_shard=file` gives each worker its
own files (tf.data's FILE auto-shard), so the cluster reads the data once per
epoch, in another order than one device's.
"""

from collections.abc import Callable

import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine.input import data
from tf_mgpu.engine.input.share import Share
from tf_mgpu.engine.input.stream import SHUFFLE_BUFFER, Stream, epoch_seed


def worker_steps(
    split: Stream,
    global_batch: int,
    seed: int,
    epoch: int,
    context: tf.distribute.InputContext,
    shard: str = "example",
    preprocess: Callable = data.identity,
) -> tf.data.Dataset:
    """This worker's share of epoch `epoch`: one element per step, a tuple with one
    (x, y[, sample_weight]) batch per local replica, in replica order.

    shard="example": every worker reads the epoch's shuffled examples and keeps
    its pipeline's share of each global batch, so the replicas of every worker
    together train on one run of `global_batch` consecutive shuffled examples
    per step, as one device would. shard="file": each worker reads only its own
    files of the dataset (tf.data's FILE auto-shard), shuffled and taken from the
    start each epoch (again from its start if its files run short); the example
    order then differs from one device's.
    """
    share = Share.of(context, global_batch)
    per_replica, here = share.per_replica, share.here
    steps = data.steps_per_epoch(len(split), global_batch)
    buffer = SHUFFLE_BUFFER
    if shard == "file":
        # Numbered within this worker's files: the file reader must come first to be sharded.
        whose = f" (worker {context.input_pipeline_id}'s files)"
        own = split.examples(own_files(split.dataset, context), whose)
        examples = own.shuffle(buffer, seed=epoch_seed(seed, epoch)).repeat()
        # A worker whose files hold nothing ends here at once; said in one line
        # (`stream_checks.reraise`), not as its peers' lost collective.
        examples = examples.take(steps * per_replica * here).apply(
            tf.data.experimental.assert_cardinality(steps * per_replica * here)
        )
    else:
        shuffled = split.examples().shuffle(buffer, seed=epoch_seed(seed, epoch))
        examples = shuffled.take(steps * global_batch).shard(
            context.num_input_pipelines, context.input_pipeline_id
        )

    def per_replica_parts(x, *labels):
        def part(r):
            rows = slice(r * per_replica, (r + 1) * per_replica)
            cut = tf.nest.map_structure(lambda a: a[rows], (x, *labels))
            return (preprocess(cut[0]), *cut[1:])

        return tuple(part(r) for r in range(here))

    return (
        examples.batch(per_replica * here, drop_remainder=True)
        .map(per_replica_parts)
        .prefetch(tf.data.AUTOTUNE)
    )


def own_files(dataset: tf.data.Dataset, context: tf.distribute.InputContext) -> tf.data.Dataset:
    """`dataset` with only this input pipeline's files: tf.data's FILE auto-shard, the
    rewrite `tf.distribute` applies to a distributed dataset (it finds the dataset's file
    reader and shards the list of files ahead of it).

    TensorFlow exposes that rewrite only through `experimental_distribute_dataset`, which
    cannot feed a checkpointed iterator; it is called here as that method calls it.
    """
    if context.num_input_pipelines == 1:
        return dataset
    return internals.auto_shard_by_file(
        dataset,
        context.num_input_pipelines,
        context.input_pipeline_id,
        context.num_replicas_in_sync,
    )
