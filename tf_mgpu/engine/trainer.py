"""Per-replica steps of any task, and the compiled loops that run them.

The step maths live here, not in the task: the loss of each replica is the
sum of its per-example losses divided by the global batch, plus the
model's regularization losses divided by the number of replicas, so the
all-reduced gradient is that of the mean loss over the global batch with
the regularization counted once. That is what makes N replicas train like
one device, whatever the compiled loss object's own reduction. What the
steps change is `tf_mgpu.engine.state.TrainState`.
"""

import functools
import time

import tensorflow as tf

from tf_mgpu.config import Config
from tf_mgpu.engine import data, jit, loop, metrics, schedules, stream
from tf_mgpu.engine.state import TrainState, create_state, replica_streams
from tf_mgpu.engine.task import Task, check_labels, output_float32
from tf_mgpu.errors import Diverged, UserError


def _outputs(state: TrainState, x, training: bool):
    return output_float32(state.model(x, training=training))


def _weighted(per_example: tf.Tensor, w) -> tf.Tensor:
    """Each example's loss times its sample weight (Keras's `sample_weight`), if any."""
    return per_example if w is None else per_example * tf.cast(w, per_example.dtype)


def _gradients(state: TrainState, global_batch: int, accumulation_steps: int, x, y, w=None):
    """This replica's share of the gradient of the mean loss over the global batch,
    and whether its loss was finite. With sample weights `w`, the loss is the sum of
    the weighted losses divided by the global batch, as Keras's default reduction."""
    with tf.GradientTape() as tape, replica_streams(state):
        y_pred = _outputs(state, x, training=True)
        per_example = _weighted(state.objective.loss(y, y_pred), w)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        regularization = _regularization(state, per_example.dtype)
        if regularization is not None:  # once per step over all replicas
            loss += tf.nn.scale_regularization_loss(regularization) / accumulation_steps
            per_example += regularization  # reported as Keras reports it
        # As Keras's train_step: a LossScaleOptimizer (mixed_float16) scales the loss and
        # unscales the gradient in `apply`; any other optimizer returns `loss` itself.
        scaled = state.optimizer.scale_loss(loss)
    state.train_sums.update(per_example, y, y_pred)
    return tape.gradient(scaled, state.model.trainable_variables), tf.math.is_finite(loss)


def replica_train_step(
    state: TrainState, global_batch: int, x, y, w=None, accumulation_steps: int = 1
) -> tf.Tensor:
    """One optimizer step on one replica's share of a global batch.

    The optimizer sums gradients over replicas, so every replica applies the
    gradient of the mean loss over the whole global batch.

    With `accumulation_steps` K > 1 the share arrives as K micro-batches
    (consecutive runs of `len(y) / K` examples): their gradients are summed
    here, one at a time, so only one micro-batch's activations live at once,
    and the optimizer all-reduces and applies once per step.

    Returns whether this replica's loss was finite.
    """
    variables = state.model.trainable_variables
    gradients = functools.partial(_gradients, state, global_batch, accumulation_steps)
    if accumulation_steps == 1:
        grads, finite = gradients(x, y, w)
    else:
        micro = y.shape[0] // accumulation_steps

        def add(j, grads, finite):  # a graph loop: the loops run without AutoGraph (loop.py)
            rows = j * micro + tf.range(micro)
            w_rows = None if w is None else tf.gather(w, rows)
            more, more_finite = gradients(data.gather(x, rows), tf.gather(y, rows), w_rows)
            return j + 1, [g + d for g, d in zip(grads, more, strict=True)], finite & more_finite

        _, grads, finite = tf.while_loop(
            lambda j, *_: j < accumulation_steps,
            add,
            (tf.constant(0), [tf.zeros_like(v) for v in variables], tf.constant(True)),
        )
    if _reduces_first(state.optimizer):
        grads = _global_on_first_replica(grads)
    state.optimizer.apply_gradients(zip(grads, variables, strict=True))
    if state.steps is not None:
        state.steps.assign_add(1)
    return finite


def replica_own_step(state: TrainState, x, y, w=None) -> tf.Tensor:
    """One step of the model's own `train_step` on one replica's share of a global batch.

    Keras's `fit` runs the same call inside `strategy.run`: the step decides how
    its loss is reduced (Keras's `compute_loss` divides the compiled loss by the
    replica count) and applies the optimizer, which sums the replicas' gradients.
    Returns whether the loss it reports is finite (True if it reports none).
    """
    with replica_streams(state):
        logs = state.model.train_step((x, y) if w is None else (x, y, w))
    state.train_sums.count(tf.shape(y)[0])
    state.steps.assign_add(1)
    loss = logs.get("loss") if isinstance(logs, dict) else None
    if loss is None or not isinstance(loss, (tf.Tensor, tf.Variable, float)):
        return tf.constant(True)
    return tf.reduce_all(tf.math.is_finite(tf.cast(loss, tf.float32)))


def _reduces_first(optimizer) -> bool:
    """Whether the optimizer must see the global batch's gradient, not this replica's share.

    Keras's optimizer clips each replica's share before it sums them, and a
    LossScaleOptimizer decides to skip a step from the first local replica's
    share: neither is what one device does (nor, for the skip, agreed between
    workers). Given the global gradient, both act as on one device.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return False
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    clips = inner.clipnorm or inner.global_clipnorm or inner.clipvalue
    return bool(clips) or inner is not optimizer


def _global_on_first_replica(grads: list) -> list:
    """The global gradient on replica 0 and `g * 0` on the others, so that the optimizer,
    which sums what every replica hands it, applies exactly the global gradient
    (`g + 0 + ... + 0 == g`), clips and checks it where replica 0 holds all of it, and
    every replica sees a non-finite gradient as non-finite (`inf * 0` is NaN)."""
    context = tf.distribute.get_replica_context()
    dense = [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices of an embedding too
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, dense)
    first = tf.equal(context.replica_id_in_sync_group, 0)
    return [g * tf.cast(first, g.dtype) for g in total]


def _regularization(state: TrainState, dtype) -> tf.Tensor | None:
    """The model's regularization losses of the call just made, summed, or None."""
    losses = state.model.losses
    return tf.cast(tf.add_n(losses), dtype) if losses else None


def replica_eval_step(state: TrainState, sums: metrics.Sums, x, y, weights, w=None) -> None:
    """Sums the test loss as Keras's `evaluate` reports it: the compiled loss (times the
    sample weights `w`, if any) plus the regularization losses, and every metric
    (unweighted by `w`, as Keras's compiled `metrics` are) into `sums`. `weights` is 0
    for padding."""
    y_pred = _outputs(state, x, training=False)
    per_example = _weighted(state.objective.loss(y, y_pred), w)
    regularization = _regularization(state, per_example.dtype)
    if regularization is not None:
        per_example += regularization
    sums.update(per_example, y, y_pred, weights)


class Trainer:
    """The training state and its compiled loops, fed as `config.input` says.

    The loops are built on first use, so a checkpoint restored into `state`
    before then decides where the data starts.
    """

    def __init__(
        self, strategy: tf.distribute.Strategy, config: Config, task: Task, datasets: data.Data
    ):
        replicas = strategy.num_replicas_in_sync
        self._strategy, self._config, self._datasets = strategy, config, datasets
        self.task = task
        self.per_replica = config.batch_size * config.accumulation_steps
        self.global_batch = self.per_replica * replicas
        self.eval_batch = config.batch_size * replicas
        self.train_examples = len(datasets.train)
        self.train_steps = data.steps_per_epoch(self.train_examples, self.global_batch)
        self.steps_per_loop = config.steps_per_loop
        self.state = create_state(strategy, config, task, datasets.train.take(slice(0, 2)))
        if self.state.own_step and config.accumulation_steps > 1:
            raise UserError(
                f"{task.where}: {type(self.state.model).__name__} trains with its own "
                f"train_step, which tf_mgpu cannot split into micro-batches; drop "
                f"--accumulation_steps"
            )
        check_labels(self.state.objective.sparse_classes, datasets, task.where)
        # A tf.data split streams, whatever --input says.
        self.input = "stream" if stream.streams(datasets) else config.input
        self.jit = jit.choose(config.jit_compile, strategy, self.state.model, self.input)
        self.jit_scope = self.jit.scope
        self.learning_rate = schedules.apply(
            self.state.optimizer,
            config,
            global_batch=self.global_batch,
            reference_batch=task.reference_batch or config.batch_size,
            warmup_steps=round(config.warmup_epochs * self.train_steps),
            where=task.where,
        )
        # What each epoch evaluates, in order: the validation split if any, then the test split.
        self._evaluated = {"test": (datasets.test, self.state.test_sums)}
        if datasets.validation is not None:
            self._evaluated = {"val": (datasets.validation, self._sums_for(datasets.validation))}
            self._evaluated["test"] = (datasets.test, self.state.test_sums)
        self._train = self._evals = None
        self.call_seconds = 0.0  # spent in training calls so far, in this process
        self.eval_seconds = 0.0  # and in evaluation calls

        @tf.function(autograph=False)
        def weights_finite() -> tf.Tensor:
            weights = self.state.model.weights
            return tf.reduce_all([tf.reduce_all(tf.math.is_finite(w)) for w in weights])

        self._weights_finite = weights_finite

    def step(self) -> int:
        """Training steps taken so far, over every epoch."""
        counter = (
            self.state.steps if self.state.steps is not None else self.state.optimizer.iterations
        )
        return int(counter.numpy())

    def position(self) -> tuple[int, int]:
        """(finished epochs, steps taken in the current epoch)."""
        epoch = int(self.state.epoch.numpy())
        return epoch, self.step() - epoch * self.train_steps

    def weights_finite(self) -> bool:
        return bool(self._weights_finite())

    def rate_at(self, step: int) -> float:
        return schedules.rate_at(self.learning_rate, step)

    def _build_loops(self) -> None:
        config, strategy, datasets = self._config, self._strategy, self._datasets
        if self.state.own_step:
            train_step = functools.partial(replica_own_step, self.state)
        else:
            train_step = functools.partial(
                replica_train_step,
                self.state,
                self.global_batch,
                accumulation_steps=config.accumulation_steps,
            )
        self._evals = {
            prefix: (self._eval_loop(split, sums), sums)
            for prefix, (split, sums) in self._evaluated.items()
        }
        if self.input == "resident":
            self._train = loop.ResidentTrain(
                strategy,
                train_step,
                datasets.train,
                global_batch=self.global_batch,
                per_replica=self.per_replica,
                seed=config.seed,
                scope=self.jit_scope,
                preprocess=self.task.preprocess,
            )
        else:
            epoch, step = self.position()
            train_fn = functools.partial(
                stream.train_dataset,
                datasets.train,
                self.global_batch,
                config.seed,
                config.epochs,
                first_epoch=epoch,
                first_step=step,
                preprocess=self.task.preprocess,
            )
            self._train = loop.StreamTrain(strategy, train_step, train_fn, self.jit_scope)

    def _sums_for(self, split) -> metrics.Sums:
        """Sums of the compiled loss and metrics over another split (validation), built
        in the strategy's scope on two of its examples."""
        with self._strategy.scope():
            sums = metrics.Sums("val", self.state.objective.metrics)
            if sums.stateful:
                sample = split.take(slice(0, 2))
                y_pred = output_float32(self.state.model(self.task.preprocess(sample.x)))
                sums.build(tf.constant(sample.y), y_pred)
        return sums

    def _eval_loop(self, split, sums: metrics.Sums):
        """The compiled pass over every example of `split`, summing into `sums`."""
        eval_step = functools.partial(replica_eval_step, self.state, sums)
        preprocess = self.task.preprocess
        if self.input == "resident":
            return loop.ResidentEval(
                self._strategy,
                eval_step,
                split,
                global_batch=self.eval_batch,
                scope=self.jit_scope,
                preprocess=preprocess,
            )
        eval_fn = functools.partial(
            stream.eval_dataset, split, self.eval_batch, preprocess=preprocess
        )
        return loop.StreamEval(
            self._strategy,
            eval_step,
            eval_fn,
            steps=data.eval_steps(len(split), self.eval_batch),
            scope=self.jit_scope,
        )

    def compile(self) -> float:
        """Traces and compiles the training and evaluation calls by running each for no step.

        Changes no variable, and on several workers runs no collective. Returns the
        seconds it took: what the first calls would otherwise add to the first epoch.
        Where XLA compiles each replica's step apart (GPUs), that compile still
        happens in the first step.
        """
        if self._train is None:
            self._build_loops()
        started = time.perf_counter()
        epoch, step = self.position()
        self._train.run(epoch, step, 0)
        for evaluation, _ in self._evals.values():
            evaluation.run(count=0)
        return time.perf_counter() - started

    def train_epoch(self, between_calls=lambda last: None) -> dict:
        """The rest of the current epoch, `steps_per_loop` steps per call; collective under MWMS.

        `between_calls(last)` runs after every call (`last`: the epoch's
        training is done); it may save or stop. Time spent there does not count
        in the epoch's seconds. Raises Diverged at the first non-finite loss.
        """
        if self._train is None:
            self._build_loops()
        epoch, start = self.position()
        if start == 0:
            self.state.train_sums.reset()
        seconds = 0.0
        for first in range(start, self.train_steps, self.steps_per_loop):
            count = min(self.steps_per_loop, self.train_steps - first)
            started = time.perf_counter()
            bad = self._train.run(epoch, first, count)
            call = time.perf_counter() - started
            seconds += call
            self.call_seconds += call
            if bad >= 0:
                raise Diverged(self._diverged(epoch, bad))
            between_calls(first + count == self.train_steps)
        started = time.perf_counter()
        sums = self.state.train_sums.result()  # reading the sums waits for the last step
        seconds += time.perf_counter() - started
        self.state.epoch.assign_add(1)
        trained = (self.train_steps - start) * self.global_batch  # in this process
        return {
            **metrics.prefixed("train", sums),
            "examples_per_second": trained / seconds,
            "seconds": seconds,
        }

    def _diverged(self, epoch: int, bad: int) -> str:
        step = epoch * self.train_steps + bad + 1
        return (
            f"the training loss is not finite at step {step:,} (epoch {epoch + 1}, step "
            f"{bad + 1} of {self.train_steps}) with learning rate {self.rate_at(step - 1):g}; "
            f"lower --learning_rate"
        )

    def evaluate(self) -> dict:
        """The loss and every compiled metric over every validation example (`val_*`, if
        there is a validation split) and every test example (`test_*`), summed over every
        replica."""
        if self._evals is None:
            self._build_loops()
        results = {}
        for prefix, (evaluation, sums) in self._evals.items():
            sums.reset()
            started = time.perf_counter()
            evaluation.run()
            self.eval_seconds += time.perf_counter() - started
            results.update(metrics.prefixed(prefix, sums.result()))
        return results
