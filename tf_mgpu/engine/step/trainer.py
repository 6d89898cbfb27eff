"""The Trainer: a task's training state, its compiled loops, and the epoch's calls.

The per-replica step maths live in `tf_mgpu.engine.step.replica_steps`; this module builds
the state, feeds the loops (`tf_mgpu.engine.step.loop`) as `config.input` says (resolved
by `tf_mgpu.engine.input.placement`), and runs an epoch's calls, evaluations and reads.
"""

import functools
import time

import keras
import tensorflow as tf

from tf_mgpu.config import Config
from tf_mgpu.engine.input import arrays, data, placement, source, stream, stream_checks
from tf_mgpu.engine.input.checks import check_labels
from tf_mgpu.engine.model import metrics, schedules
from tf_mgpu.engine.model.compiled import evaluable
from tf_mgpu.engine.state import share_sized
from tf_mgpu.engine.state.training_state import create_state
from tf_mgpu.engine.step import jit, loop, pace, replica_state, stream_train
from tf_mgpu.engine.step import replica_steps as steps
from tf_mgpu.engine.step import replicas as replicas_lib
from tf_mgpu.engine.step.replica_steps import replica_own_step, replica_train_step
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import Diverged, UserError


class Trainer:
    """The training state and its compiled loops, fed as `config.input` says.

    The loops are built on first use, so a checkpoint restored into `state`
    before then decides where the data starts.
    """

    def __init__(
        self, strategy: tf.distribute.Strategy, config: Config, task: Task, datasets: data.Data
    ):
        replicas = strategy.num_replicas_in_sync
        # Float arrays in the run's floatx, as fit casts them (float64 for --dtype=float64).
        floatx = "float64" if config.dtype == "float64" else keras.config.floatx()
        datasets = arrays.in_floatx(datasets, floatx)
        # Resident where the arrays fit, else read by index (a tf.data split streams).
        self.placement = placement.place(config.input, strategy, datasets, task.where)
        datasets = self.placement.datasets
        self.input_mode = self.placement.input  # --input resolved: resident, index or stream
        self._strategy, self._config, self._datasets = strategy, config, datasets
        self.task = task
        # The model is built, checked and probed on one replica's batch, as fit builds on its
        # first batch (a model may hold its batch size in a reshape).
        self._first = datasets.train.take(slice(0, config.batch_size))
        tested = datasets.test.take(slice(0, config.batch_size))
        try:
            self.state = create_state(strategy, config, task, self._first, tested)
        except UserError:
            raise
        except Exception as error:  # a model held to the global batch's size: one line
            share_sized.refuse_if_global(
                create_state, strategy, config, task, datasets.train, datasets.test, error
            )
            raise
        # --sync_batch_norm: before any step is traced (Keras reads it in each call).
        self.synchronized = (
            replicas_lib.synchronize(self.state.model)
            if config.sync_batch_norm and replicas > 1
            else []
        )
        self.accumulation_steps = _accumulation(config, self.state, task.where)
        self.per_replica = config.batch_size * self.accumulation_steps
        self.global_batch = self.per_replica * replicas
        self.eval_batch = config.batch_size * replicas
        self.train_examples = len(datasets.train)
        self.train_steps = data.steps_per_epoch(self.train_examples, self.global_batch)
        # Steps per call: sized by time, capped by an explicit --steps_per_loop, which also
        # sets the blocks after which the actions between calls run (see engine.pace).
        self.block = None if config.steps_per_loop == "auto" else config.steps_per_loop
        self.pace = pace.Pace(config.loop_seconds, cap=self.block)
        self.eval_pace: pace.Pace | None = None  # sized from the training calls, once measured
        if self.state.own_step and self.accumulation_steps > 1:
            raise UserError(
                f"{task.where}: {type(self.state.model).__name__} trains with its own "
                f"train_step, which tf_mgpu cannot split into micro-batches; drop "
                f"--accumulation_steps"
            )
        check_labels(self.state.compiled.sparse_classes, datasets, task.where)
        self.state.per_replica.extend(self._updated_per_replica())
        self.jit = jit.choose(config.jit_compile, strategy, self.state.model, self.input_mode)
        self.jit_scope = self.jit.scope
        self.learning_rate = schedules.apply(
            self.state.optimizer,
            config,
            global_batch=self.global_batch,
            reference_batch=task.reference_batch or config.batch_size,
            warmup_steps=round(config.warmup_epochs * self.train_steps),
            where=task.where,
        )
        # What each epoch evaluates, in order: the validation split if any, then the test
        # split; nothing for a model Keras's evaluate cannot score (`compiled.evaluable`).
        self.evaluates = evaluable(self.state.model)
        self._evaluated = {}
        if datasets.validation is not None and self.evaluates:
            self._evaluated["val"] = (datasets.validation, self._validation_sums())
        if self.evaluates:
            self._evaluated["test"] = (datasets.test, self.state.test_sums)
        self._train = self._evals = None
        self._finished = False  # the last train_epoch ran every step of its epoch
        # A tf.data split's loop, made now: its place in the data is saved with each checkpoint.
        self.stream_loop = self._stream_train()
        self.call_seconds = 0.0  # spent in training calls so far, in this process
        # The last training call: its first step in the epoch, its steps, and its first
        # step (from 1) whose loss was not finite here, 0 if none (see `train_epoch`).
        self.last_call = (0, 0, 0)
        self.eval_seconds = 0.0  # and in evaluation calls

        @tf.function(autograph=False)
        def weights_finite() -> tf.Tensor:
            # Only floats can be NaN: an adapted Normalization's count is an int64 weight.
            weights = [w for w in self.state.model.weights if tf.as_dtype(w.dtype).is_floating]
            return tf.reduce_all([tf.reduce_all(tf.math.is_finite(w)) for w in weights])

        self._weights_finite = weights_finite

    @property
    def datasets(self) -> data.Data:
        return self._datasets

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
        """The rate at optimizer step `step`: a schedule's, or the optimizer's own now (a
        Keras callback may have changed a constant rate)."""
        if callable(self.learning_rate):
            return schedules.rate_at(self.learning_rate, step)
        return float(schedules.inner(self.state.optimizer).learning_rate.numpy())

    def _train_step(self):
        """The replicas' training step, as the loops call it with one batch."""
        if self.state.own_step:
            return functools.partial(replica_own_step, self.state)
        return functools.partial(
            replica_train_step, self.state, accumulation_steps=self.accumulation_steps
        )

    def _updated_per_replica(self) -> list:
        """The model's variables its training step updates on each replica (see
        `replica_state`), found by tracing the step on a share of the first examples."""
        state = self.state
        found = replica_state.candidates(state.model, state.random_states())
        if self._strategy.num_replicas_in_sync == 1 or not found:
            return []
        x = tf.nest.map_structure(tf.constant, self.task.preprocess(self._first.x))
        labels = [tf.nest.map_structure(tf.constant, a) for a in self._first.labels()]
        return replica_state.written_per_replica(
            self._strategy, self._train_step(), (x, *labels), found
        )

    def _stream_train(self) -> stream_train.LocalIteratorTrain | None:
        """The training loop of a tf.data split, whose place in the data is checkpointed;
        None for arrays and sources read by index (their place is arithmetic)."""
        if not isinstance(self._datasets.train, stream.Stream):
            return None
        return stream_train.for_split(
            self._strategy,
            self._train_step(),
            self._datasets.train,
            global_batch=self.global_batch,
            seed=self._config.seed,
            shard=self._config.stream_shard,
            preprocess=self.task.preprocess,
            scope=self.jit_scope,
            steps=self.train_steps,
        )

    def _build_loops(self) -> None:
        config, strategy, datasets = self._config, self._strategy, self._datasets
        train_step = self._train_step()
        self._evals = {
            prefix: (self._eval_loop(split, sums), sums)
            for prefix, (split, sums) in self._evaluated.items()
        }
        if self.input_mode == "resident":
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
        elif self.stream_loop is not None:
            self._train = self.stream_loop
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
            self._train = loop.IteratorTrain(strategy, train_step, train_fn, self.jit_scope)

    def _validation_sums(self) -> metrics.ModelMetrics:
        """The loss and metrics over another split (validation)."""
        with self._strategy.scope():
            return self.state.metrics_for("val")

    def _eval_loop(self, split, sums: metrics.ModelMetrics):
        """The compiled pass over every example of `split`, measuring into `sums`."""
        eval_step = steps.eval_step(self.state.model, sums)
        preprocess = self.task.preprocess
        if self.input_mode == "resident":
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
            examples=len(split),
            global_batch=self.eval_batch,
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
        if step >= self.train_steps:  # resumed after the epoch's steps, before its evaluation
            epoch, step = epoch + 1, 0
        self._train.run(epoch, step, 0)
        for evaluation, _ in self._evals.values():
            evaluation.run(0, 0)
        return time.perf_counter() - started

    def train_epoch(self, after_call=None, before_call=None, close: bool = True) -> dict:
        """The rest of the current epoch, in calls of `pace.count` steps; collective under MWMS.

        `before_call(steps)` runs before each call. `after_call(last, block_end)` runs
        after each (`last`: the epoch's training is done; `block_end`: a block of
        --steps_per_loop steps ends, or any call under auto); it may save, or stop
        (raise), or return True to end the epoch there (a Keras callback's
        `model.stop_training`; the epoch then stays unfinished). Time spent there does
        not count in the epoch's seconds. With `close`, a finished epoch is counted done
        here; else `close_epoch` does it (after its evaluation). Raises Diverged at the
        first non-finite loss; with `after_call`, after it, which decides (the workers
        agree on the first bad step, see `diverged`).
        """
        if self._train is None:
            self._build_loops()
        epoch, start = self.position()
        if start == 0:
            self.state.train_sums.reset()
        seconds, end = 0.0, start
        block_end_at = start + (self.block or 0)
        while end < self.train_steps:
            count = min(self.pace.count, self.train_steps - end)
            if self.block:
                count = min(count, block_end_at - end)
            if before_call:
                before_call(count)
            started = time.perf_counter()
            # A bad example, as its own line (a tf.data split's loop says its own).
            with source.reraise(self._datasets.train):
                bad = self._train.run(epoch, end, count)
            call = time.perf_counter() - started
            self.pace.record(count, call)
            seconds += call
            self.call_seconds += call
            self.last_call = (end, count, bad - end + 1 if bad >= 0 else 0)
            if bad >= 0 and not after_call:
                raise Diverged(self.diverged(epoch, bad))
            end += count
            block_end = not self.block or end >= block_end_at or end == self.train_steps
            if self.block and end >= block_end_at:
                block_end_at = end + self.block
            if after_call and after_call(end == self.train_steps, block_end):
                break
            if not after_call:
                self.pace.follow(self.pace.proposal())
        started = time.perf_counter()
        sums = self.state.train_sums.result()  # reading the sums waits for the last step
        seconds += time.perf_counter() - started
        self._finished = end == self.train_steps
        if close:
            self.close_epoch()
        trained = (end - start) * self.global_batch  # in this process
        return {
            **metrics.prefixed("train", sums),
            "examples_per_second": trained / seconds,
            "seconds": seconds,
        }

    def close_epoch(self) -> None:
        """Counts the epoch trained by `train_epoch` done, if its steps all ran."""
        if self._finished:
            self.state.epoch.assign_add(1)
            self._finished = False

    def diverged(self, epoch: int, bad: int) -> str:
        """The line for a loss not finite at step `bad` of `epoch` (both from 0)."""
        step = epoch * self.train_steps + bad + 1
        return (
            f"the training loss is not finite at step {step:,} (epoch {epoch + 1}, step "
            f"{bad + 1} of {self.train_steps}) with learning rate {self.rate_at(step - 1):g}; "
            f"lower --learning_rate"
        )

    def evaluate(self, before_call=None, after_call=None) -> dict:
        """The loss and every compiled metric over every validation example (`val_*`, if
        there is a validation split) and every test example (`test_*`), summed over every
        replica.

        With `after_call`, each split runs in calls sized by time (`eval_pace`), with
        `before_call(steps)` before each and `after_call()` after (which may stop: raise);
        without, in one call each.

        The model's random states end as they began: a layer that draws in inference too
        (a VAE's sampling) leaves training's streams as they would be without an
        evaluation, so a run resumed from a checkpoint draws what it would have drawn.
        """
        streams = self.state.random_states()
        kept = [tf.identity(tf.convert_to_tensor(v)) for v in streams]
        try:
            return self._evaluate(before_call, after_call)
        finally:
            for variable, value in zip(streams, kept, strict=True):
                variable.assign(value)

    def _evaluate(self, before_call, after_call) -> dict:
        if self._evals is None:
            self._build_loops()
        if self.eval_pace is None:  # an evaluation step costs less than a training one
            self.eval_pace = pace.Pace(self.pace.target, first=self.pace.count)
        results = {}
        for prefix, (evaluation, sums) in self._evals.items():
            sums.reset()
            total, done = evaluation.steps, 0
            with source.reraise(self._evaluated[prefix][0]), stream_checks.reraise():
                while done < total:
                    count = min(self.eval_pace.count, total - done) if after_call else total
                    if before_call:
                        before_call(count)
                    started = time.perf_counter()
                    evaluation.run(done, count)
                    took = time.perf_counter() - started
                    self.eval_seconds += took
                    self.eval_pace.record(count, took)
                    done += count
                    if after_call:
                        after_call()
            results.update(metrics.prefixed(prefix, sums.result()))
        return results

    def expected_seconds(self, steps: int, evaluating: bool = False) -> float | None:
        """How long a call of `steps` should take, from the calls measured; None before the
        first call of its kind (training or evaluating) was measured."""
        if evaluating:
            return self.eval_pace.expected_seconds(steps) if self.eval_pace else None
        return self.pace.expected_seconds(steps)


def _accumulation(config: Config, state, where: str) -> int:
    """Micro-batches per step: --accumulation_steps, or the optimizer's own
    gradient_accumulation_steps, which the engine runs (see state._take_accumulation)."""
    own = state.optimizer_accumulation
    if own is None or config.accumulation_steps == own:
        return own or config.accumulation_steps
    if config.accumulation_steps > 1:
        raise UserError(
            f"{where}: the optimizer's gradient_accumulation_steps={own} and "
            f"--accumulation_steps={config.accumulation_steps} disagree; drop one of them"
        )
    return own
