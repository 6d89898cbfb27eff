"""Training from a tf.data split through one local iterator per worker, saved with each checkpoint.

A tf.data split (`tf_mgpu.engine.input.stream.Stream`) is read by an iterator of this
worker's own, not a distributed one: TensorFlow 2.21's distributed iterators
cannot be checkpointed (`tf.train.Checkpoint` refuses them as not trackable),
while a local `tf.data` iterator saves its exact position, shuffle buffer
included. Each element is one step's examples for this worker's replicas, cut
per replica (`stream_shard.worker_steps`); each step places replica r's part on its
device and runs the replicas' step on them.

A resumed epoch restores the iterator saved beside the checkpoint
(`ckpt-<step>.input-<worker>-of-<layout>`, written by every worker into the
checkpoint directory, which every worker reads anyway): no example is read
twice. The layout (workers, replicas per worker, --stream_shard) is in the
name: tf.data restores a state by its ops' names, not their constants, so a
state saved on 2 workers would restore into 3 and read the wrong share; a
resume on another layout re-reads instead. So does a dataset whose iterator
cannot be saved (`Dataset.from_generator`, a `py_function`): its epoch is
read from the start and the steps already trained are skipped, exact for
--stream_shard=example on any layout. The resume line says which.
"""

import tensorflow as tf

from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.input import stream_checks, stream_shard
from tf_mgpu.engine.input.share import Share
from tf_mgpu.engine.step import loop


def for_split(
    strategy,
    replica_step,
    split,
    *,
    global_batch: int,
    seed: int,
    shard: str,
    preprocess,
    scope: str,
    steps: int,
) -> "LocalIteratorTrain":
    """The training loop of tf.data split `split` (a `stream.Stream`) on this worker."""
    context = input_context(strategy)

    def epoch_steps(epoch: int):
        return stream_shard.worker_steps(
            split, global_batch, seed, epoch, context, shard=shard, preprocess=preprocess
        )

    share = Share.of(context, global_batch)
    name = f"{share.pipeline}-of-{share.layout}-{shard}"
    return LocalIteratorTrain(strategy, replica_step, epoch_steps, scope, steps=steps, name=name)


class LocalIteratorTrain:
    """Training steps fed by a local iterator over `epoch_steps(epoch)`, a new one each epoch.

    `epoch_steps(epoch)` is this worker's `stream_shard.worker_steps` for that
    epoch; `name` names this worker's saved iterators (its index and the layout).
    """

    def __init__(self, strategy, replica_step, epoch_steps, scope: str, *, steps: int, name: str):
        self._epoch_steps, self._steps_per_epoch, self._worker = epoch_steps, steps, name
        self._epoch, self._next, self._iterator = None, 0, None
        self._pending = None  # a checkpoint's prefix, for the iterator of the step it holds
        self.saveable = True  # until an iterator refuses to be saved
        local = strategies.devices_of(strategy)
        run_replica = loop.compiled(replica_step, scope)

        def on_replicas(parts):
            def value(context):
                index = context.replica_id_in_sync_group % len(local)
                with tf.device(local[index]):
                    return tf.nest.map_structure(tf.identity, parts[index])

            return strategy.experimental_distribute_values_from_function(value)

        @tf.function(autograph=False)
        def steps(iterator, first, count):
            def step(k, bad):
                finite = strategy.run(run_replica, args=on_replicas(iterator.get_next()))
                return loop.first_bad(strategy, finite, first + k, bad)

            return loop.repeat_steps(count, step, tf.constant(-1, tf.int64))

        self._steps = steps

    def run(self, epoch: int, first: int, count: int) -> int:
        """Steps `first` to `first + count - 1` of `epoch`; the first whose loss was not
        finite, or -1. `count=0` traces the call and runs no step."""
        with stream_checks.reraise():  # a bad example, or files it cannot shard: one line
            if (self._epoch, self._next) != (epoch, first):
                self._start(epoch, first)
            first_t, count_t = tf.constant(first, tf.int64), tf.constant(count, tf.int64)
            bad = int(self._steps(self._iterator, first_t, count_t))
        self._next = first + count
        return bad

    def _start(self, epoch: int, first: int) -> None:
        """This epoch's iterator, at step `first`: restored from beside the checkpoint
        restored, else by re-reading the epoch and skipping its first steps.

        Each attempt reads a new dataset: iterating one dataset twice reshuffles it (its
        shuffle's seed generator moves on), so a second iterator of the same object would
        read another order than the uninterrupted run's first one."""
        self._epoch, self._next = epoch, first
        self._iterator = iter(self._epoch_steps(epoch))
        if first == 0:
            return
        saved = self._pending and _input_path(self._pending, self._worker)
        self._pending = None
        if saved and tf.io.gfile.exists(saved + ".index"):
            try:
                tf.train.Checkpoint(iterator=self._iterator).read(saved).assert_consumed()
                return
            # Another dataset than the one saved (the task file changed), or a damaged file.
            except (tf.errors.OpError, AssertionError, ValueError) as e:
                reason = str(e).strip().splitlines()[0][:120]
                print(
                    f"tf_mgpu resume: warning: the saved iterator {saved} does not fit the "
                    f"training dataset ({reason}); re-reading the epoch and skipping {first} "
                    f"steps",
                    flush=True,
                )
        self._iterator = iter(self._epoch_steps(epoch).skip(first))

    # The checkpoint's side: `tf_mgpu.engine.state.checkpoint.Checkpoints` calls these.

    def save(self, prefix: str) -> None:
        """Writes this worker's iterator beside checkpoint `prefix`, unless the epoch is
        done (the next one starts from its beginning) or the dataset cannot be saved."""
        if not self.saveable or self._iterator is None or self._next >= self._steps_per_epoch:
            return
        try:
            tf.train.Checkpoint(iterator=self._iterator).write(_input_path(prefix, self._worker))
        # "PyFunc is stateful" (from_generator, py_function), or an op tf.data cannot save:
        # not a disk's fault (OSError and the rest go on to the checkpoint's one line).
        except (
            tf.errors.FailedPreconditionError,
            tf.errors.UnimplementedError,
            tf.errors.InvalidArgumentError,
        ):
            self.saveable = False

    def restore(self, prefix: str) -> str:
        """The iterator for checkpoint `prefix`'s step comes from beside it, when made.

        Returns how the data will resume, for the resume line."""
        self._pending = prefix
        self._epoch = None
        if tf.io.gfile.exists(_input_path(prefix, self._worker) + ".index"):
            return "the data from its saved iterator"
        return "the data by re-reading its epoch (no saved iterator for this layout)"


def _input_path(prefix: str, name: str) -> str:
    return f"{prefix}.input-{name}"


def input_context(strategy: tf.distribute.Strategy) -> tf.distribute.InputContext:
    """This worker's input context, as `distribute_datasets_from_function` hands it to its
    function (no iterator is made)."""
    found = []

    def capture(context):
        found.append(context)
        return tf.data.Dataset.range(1)

    strategy.distribute_datasets_from_function(capture)
    return found[0]
