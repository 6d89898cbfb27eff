"""How batches reach the replicas, how many steps one call runs, and where XLA compiles.

Two inputs, one per-replica step:
- `resident` (the default): each split is held on every replica's device as
  the task returned it (MNIST's uint8 training split is 47 MB), and each replica gathers
  its own share of the global batch from the epoch order. Nothing crosses
  from host to device per step, which is what a GPU wants.
- `stream`: the `tf.data` pipelines of `tf_mgpu.engine.input.data`, distributed with
  `distribute_datasets_from_function`: the pattern to copy for data that
  does not fit in memory.

Both visit the same examples at each step (step k of an epoch trains on
`epoch_order[k * B:(k + 1) * B]`), so both train like one device at global
batch B. One call of a loop runs the steps it is asked for (`tf_mgpu.engine.step.pace`
sizes calls by time), a graph while loop around `strategy.run` (`repeat_steps`), so the
per-call cost (Python, function dispatch, reading back) is paid once per call, not per step.

XLA (`jit_scope`): where one process has one replica, the whole call (every
step, the optimizer and the metric sums) is one XLA program; that is where
most of the speed comes from on this CPU. XLA cannot do more on CPUs: one
XLA program cannot span two devices, and XLA on CPU has no collectives, so
several logical CPU devices and MultiWorkerMirroredStrategy on CPUs run
the same loop without XLA. On GPUs, each replica's step is compiled
(TensorFlow all-reduces inside XLA there; see BUILD_NOTES: untested here).
"""

import tensorflow as tf

from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.input import data, share
from tf_mgpu.engine.model import unseeded


def jit_scope(strategy: tf.distribute.Strategy, jit_compile: bool, input_kind: str) -> str:
    """What XLA compiles: 'loop' (each whole call), 'replica' (each replica's step) or 'none'."""
    if not jit_compile:
        return "none"
    multi_worker = strategies.name_of(strategy) == "multi_worker_mirrored"
    if strategy.num_replicas_in_sync == 1 and not multi_worker and input_kind == "resident":
        return "loop"
    if all("GPU" in device.upper() for device in strategies.devices_of(strategy)):
        return "replica"
    return "none"


def _on_each_replica(strategy: tf.distribute.Strategy, arrays) -> object:
    """A copy of `arrays` (an array or a dict of arrays) on every local replica's device.

    Returns PerReplica values, in the structure of `arrays`.

    `experimental_distribute_values_from_function` alone leaves every copy
    where the value was made (the host), so each copy is placed explicitly.
    """
    local = strategies.devices_of(strategy)

    def on_each(array) -> object:
        host = tf.constant(array)

        def copy(context: tf.distribute.experimental.ValueContext) -> tf.Tensor:
            # Replica ids count every worker's replicas; each worker holds `local`.
            with tf.device(local[context.replica_id_in_sync_group % len(local)]):
                return tf.identity(host)

        return strategy.experimental_distribute_values_from_function(copy)

    return tf.nest.map_structure(on_each, arrays)


def _replica_rows(step: tf.Tensor, global_batch: int, per_replica: int) -> tf.Tensor:
    """`share.rows` for the replica this runs in (its id counts every worker's replicas)."""
    replica = tf.distribute.get_replica_context().replica_id_in_sync_group
    return share.rows(step, tf.cast(replica, tf.int64), global_batch, per_replica)


def repeat_steps(count: tf.Tensor, body, initial: tf.Tensor) -> tf.Tensor:
    """`state = body(k, state)` for k = 0 .. count - 1, as one graph loop; returns the state.

    Written as a `tf.while_loop` so the loops' `tf.function`s run without AutoGraph,
    as Keras 3's own train step does (`do_not_convert`): AutoGraph would rewrite the
    source of every function the step calls, 3 to 4 s of start-up in every process
    (measured with cProfile on mnist_mlp). A task's code is called as Keras calls it.
    """
    _, state = tf.while_loop(
        lambda k, _: k < count,
        lambda k, state: (k + 1, body(k, state)),
        (tf.constant(0, tf.int64), initial),
    )
    return state


def compiled(replica_fn, scope: str):
    replica_fn = unseeded.carried(replica_fn)
    return tf.function(replica_fn, jit_compile=True) if scope == "replica" else replica_fn


def first_bad(strategy, finite, step: tf.Tensor, bad: tf.Tensor) -> tf.Tensor:
    """`bad`, or `step` if this is the first step whose loss was not finite on a local replica.

    This worker's view only: another worker may see its bad step later or never (see
    `tf_mgpu.engine.distribute.agreement`, where the workers agree on the first).
    """
    finite_here = tf.reduce_all(tf.stack(strategy.experimental_local_results(finite)))
    return tf.where((bad < 0) & tf.logical_not(finite_here), step, bad)


class ResidentTrain:
    """Training steps that gather each replica's batch from a split held on its device.

    `per_replica` is the examples one replica takes per step (micro-batches
    included); replica r of step k takes the r-th run of `per_replica`
    examples of `order[k * global_batch:(k + 1) * global_batch]`.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        replica_step,
        split: data.Split,
        *,
        global_batch: int,
        per_replica: int,
        seed: int,
        scope: str,
        preprocess=data.identity,
    ):
        self._num_examples = len(split)
        self._used = data.steps_per_epoch(len(split), global_batch) * global_batch
        self._seed = seed
        self._order = (None, None)  # (epoch, its order): computed once per epoch
        x = _on_each_replica(strategy, split.x)
        labels = [_on_each_replica(strategy, a) for a in split.labels()]  # y, and w if any

        def replica_fn(x, labels, order, step):
            rows = tf.gather(order, _replica_rows(step, global_batch, per_replica))
            x_rows = preprocess(data.gather(x, rows))
            return replica_step(x_rows, *[data.gather(a, rows) for a in labels])

        run_replica = compiled(replica_fn, scope)

        @tf.function(jit_compile=scope == "loop", autograph=False)
        def steps(order, first, count):
            def step(k, bad):
                finite = strategy.run(run_replica, args=(x, labels, order, first + k))
                return first_bad(strategy, finite, first + k, bad)

            return repeat_steps(count, step, tf.constant(-1, tf.int64))

        self._steps = steps

    def run(self, epoch: int, first: int, count: int) -> int:
        """Steps `first` to `first + count - 1` of `epoch`.

        Returns the first of them whose loss was not finite, or -1. `count=0` traces and
        compiles the call and runs no step.
        """
        if self._order[0] != epoch:
            order = data.epoch_order(self._num_examples, self._seed, epoch)[: self._used]
            self._order = (epoch, order)
        first_t, count_t = tf.constant(first, tf.int64), tf.constant(count, tf.int64)
        return int(self._steps(self._order[1], first_t, count_t))


class IteratorTrain:
    """Training steps fed by one distributed `tf.data` iterator for the whole run (any
    split served as a `tf.data` pipeline, not only a `Stream`)."""

    def __init__(self, strategy: tf.distribute.Strategy, replica_step, dataset_fn, scope: str):
        self._iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
        run_replica = compiled(replica_step, scope)

        @tf.function(autograph=False)
        def steps(iterator, first, count):
            def step(k, bad):
                finite = strategy.run(run_replica, args=next(iterator))
                return first_bad(strategy, finite, first + k, bad)

            return repeat_steps(count, step, tf.constant(-1, tf.int64))

        self._steps = steps

    def run(self, epoch: int, first: int, count: int) -> int:
        """The next `count` steps, numbered from `first`; the iterator knows the epoch.

        Returns the first of them whose loss was not finite, or -1.
        """
        del epoch
        first_t, count_t = tf.constant(first, tf.int64), tf.constant(count, tf.int64)
        return int(self._steps(self._iterator, first_t, count_t))


def _real_here(examples: int, global_batch: int, per_replica: int) -> int:
    """The real rows (a prefix, see `share.real_rows`) of this replica's share at a pass's last
    step, known while tracing: a replica's id is a constant of its trace."""
    context = tf.distribute.get_replica_context()
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    if replica is None:
        raise RuntimeError("the replica's id is not known while tracing its step")
    return share.real_rows(examples, global_batch, per_replica, int(replica))


def _eval_calls(strategy, replica_step, examples: int, global_batch: int, scope: str, call):
    """(the compiled calls of whole steps, the compiled last step if the pass's last global
    batch is padded, else None), each made by `call(on_replica, last)`.

    `replica_step` runs with `real=None` on a whole share, and at the last step with `real`,
    how many of its share's rows are examples, a constant of its trace: the step then runs
    the model, its loss and its metrics on those rows alone, whatever shape its loss has.
    """
    per_replica = global_batch // strategy.num_replicas_in_sync
    run_replica = compiled(replica_step, scope)

    def on_replica(last: bool):
        def run(*batch):
            real = _real_here(examples, global_batch, per_replica) if last else None
            run_replica(*batch, real=real)

        return run

    padded = examples % global_batch != 0
    return call(on_replica(False), False), call(on_replica(True), True) if padded else None


class ResidentEval:
    """Every test example once per call, from copies of the padded split on each device."""

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        replica_step,
        split: data.Split,
        *,
        global_batch: int,
        scope: str,
        preprocess=data.identity,
    ):
        per_replica = global_batch // strategy.num_replicas_in_sync
        padded = data.pad_for_eval(split, global_batch)
        self.steps = len(padded[2]) // global_batch
        arrays = _on_each_replica(strategy, padded)

        def replica_fn(x, *labels_and_step, real=None):  # y, padding weights, sample weights
            *labels, step = labels_and_step
            rows = _replica_rows(step, global_batch, per_replica)
            replica_step(
                preprocess(data.gather(x, rows)),
                *[data.gather(a, rows) for a in labels],
                real=real,
            )

        def call(on_replica, last: bool):
            # The padded last step runs once a pass: not worth an XLA compile of its own.
            @tf.function(jit_compile=scope == "loop" and not last, autograph=False)
            def steps(first, count):
                def step(k, done):
                    strategy.run(on_replica, args=(*arrays, first + k))
                    return done + 1

                repeat_steps(count, step, tf.constant(0, tf.int64))

            return steps

        self._steps, self._last = _eval_calls(
            strategy, replica_fn, len(split), global_batch, scope, call
        )

    def run(self, first: int = 0, count: int | None = None) -> None:
        """Steps `first` to `first + count - 1` of the pass (default: all of it); `count=0`
        traces and compiles the call and runs no step."""
        count = self.steps - first if count is None else count
        _run_pass(self._steps, self._last, self.steps, first, count, lambda f, c: (f, c))


def _run_pass(steps, last, total: int, first: int, count: int, arguments) -> None:
    """Steps `first` to `first + count - 1` of a pass of `total`: the whole ones by `steps`,
    the padded last one (if `last`) by `last`; `count=0` compiles both and runs none.
    `arguments(first, count)` is what a call takes."""

    def call(function, at: int, how_many: int) -> None:
        function(*arguments(tf.constant(at, tf.int64), tf.constant(how_many, tf.int64)))

    end = first + count
    whole_end = min(end, total - 1) if last is not None else end
    if count == 0 or whole_end > first:
        call(steps, first, max(whole_end - first, 0))
    if last is not None and (count == 0 or end == total):
        call(last, total - 1, 0 if count == 0 else 1)


class StreamEval:
    """Every test example once per call, from an endless distributed `tf.data` iterator of
    padded passes (`examples` examples each, at `global_batch`)."""

    def __init__(
        self, strategy, replica_step, dataset_fn, *, examples: int, global_batch: int, scope: str
    ):
        self.steps = data.eval_steps(examples, global_batch)
        self._iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))

        def call(on_replica, last: bool):
            del last

            @tf.function(autograph=False)
            def steps(iterator, count):
                def step(k, done):
                    strategy.run(on_replica, args=next(iterator))
                    return done + 1

                repeat_steps(count, step, tf.constant(0, tf.int64))

            return steps

        self._steps, self._last = _eval_calls(
            strategy, replica_step, examples, global_batch, scope, call
        )

    def run(self, first: int = 0, count: int | None = None) -> None:
        """The pass's next `count` steps (default: all from `first`); the endless iterator
        knows where the pass is, so calls must follow each other. `count=0` traces and
        compiles the call and runs no step."""
        count = self.steps - first if count is None else count
        _run_pass(
            self._steps, self._last, self.steps, first, count, lambda f, c: (self._iterator, c)
        )
