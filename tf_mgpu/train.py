"""One training loop for every tf.distribute strategy.

A custom loop, not `model.fit`: Keras 3's `fit` fails under
MultiWorkerMirroredStrategy (keras-team/keras#20585), while `strategy.run`
inside `tf.function` works the same on one device, N GPUs and N machines.
"""

import contextlib
import dataclasses
import functools
import re
import time

import keras
import tensorflow as tf

from tf_mgpu import data, model
from tf_mgpu.cluster import supervisor, tf_config
from tf_mgpu.config import REFERENCE_BATCH, Config
from tf_mgpu.engine import checkpoint, devices, loop, metrics, stopping, strategies
from tf_mgpu.errors import Diverged, Failure, PeerLost, Stopped, UserError
from tf_mgpu.outputs import export, progress, report, tensorboard


@dataclasses.dataclass(frozen=True)
class TrainState:
    """Everything training changes. `epoch` counts finished epochs and training
    continues from it; with the seed it fixes which examples come next (see
    `tf_mgpu.data`). `optimizer.iterations` counts steps."""

    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    epoch: tf.Variable
    train_sums: metrics.Sums
    test_sums: metrics.Sums

    def variables(self) -> list:
        """Every variable that must agree across replicas."""
        return [*self.model.weights, *self.optimizer.variables, self.epoch]

    def checkpointed(self) -> dict:
        """What a checkpoint holds: everything training changes, and the epoch's metric sums.

        Not the learning rate: it comes from the flags, so a resumed run may change it.
        """
        return {
            "weights": list(self.model.weights),
            "optimizer": [v for v in self.optimizer.variables if "learning_rate" not in v.path],
            "epoch": self.epoch,
            "train_sums": self.train_sums.variables(),
        }


@dataclasses.dataclass(frozen=True)
class Result:
    """What `run` returns: the summary the chief writes, and the trained state."""

    summary: dict
    state: TrainState


def create_state(
    strategy: tf.distribute.Strategy, config: Config, learning_rate=None
) -> TrainState:
    """Builds model, optimizer and counters in `strategy.scope()`, so they are mirrored.

    `learning_rate` (a float or schedule) replaces `config.learning_rate`.
    """
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(config.dtype)
    with strategy.scope():
        net = model.build_model()
        optimizer = model.build_optimizer(
            config.learning_rate if learning_rate is None else learning_rate
        )
        optimizer.build(net.trainable_variables)
        return TrainState(
            model=net,
            optimizer=optimizer,
            epoch=tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch"),
            train_sums=metrics.Sums("train"),
            test_sums=metrics.Sums("test"),
        )


def _per_example_loss(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def _logits(state: TrainState, images: tf.Tensor, training: bool) -> tf.Tensor:
    # float32 whatever the compute dtype, so the loss and metrics are exact sums.
    return tf.cast(state.model(images, training=training), tf.float32)


def _gradients(state: TrainState, global_batch: int, images, labels):
    """This replica's share of the gradient of the mean loss over the global batch,
    and whether its loss was finite."""
    with tf.GradientTape() as tape:
        logits = _logits(state, images, training=True)
        per_example = _per_example_loss(labels, logits)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    state.train_sums.update(per_example, logits, labels)
    return tape.gradient(loss, state.model.trainable_variables), tf.math.is_finite(loss)


def replica_train_step(
    state: TrainState, global_batch: int, images, labels, accumulation_steps: int = 1
) -> tf.Tensor:
    """One SGD step on one replica's share of a global batch.

    The loss is summed over this replica's examples and divided by the global
    batch; the optimizer sums gradients over replicas, so every replica
    applies the gradient of the mean loss over the whole global batch.

    With `accumulation_steps` K > 1 the share arrives as K micro-batches
    (consecutive runs of `len(images) / K` examples): their gradients are
    summed here, one at a time, so only one micro-batch's activations live
    at once, and the optimizer all-reduces and applies once per step.

    Returns whether this replica's loss was finite.
    """
    variables = state.model.trainable_variables
    if accumulation_steps == 1:
        grads, finite = _gradients(state, global_batch, images, labels)
    else:
        micro = images.shape[0] // accumulation_steps
        grads = [tf.zeros_like(v) for v in variables]
        finite = tf.constant(True)
        for j in tf.range(accumulation_steps):
            rows = j * micro + tf.range(micro)
            more, more_finite = _gradients(
                state, global_batch, tf.gather(images, rows), tf.gather(labels, rows)
            )
            grads = [g + d for g, d in zip(grads, more, strict=True)]
            finite = finite & more_finite
    state.optimizer.apply_gradients(zip(grads, variables, strict=True))
    return finite


def replica_eval_step(state: TrainState, images, labels, weights) -> None:
    logits = _logits(state, images, training=False)
    state.test_sums.update(_per_example_loss(labels, logits), logits, labels, weights)


class Trainer:
    """The training state and its compiled loops, fed as `config.input` says.

    The loops are built on first use, so a checkpoint restored into `state`
    before then decides where the data starts.
    """

    def __init__(self, strategy: tf.distribute.Strategy, config: Config, datasets: data.Mnist):
        replicas = strategy.num_replicas_in_sync
        self._strategy, self._config, self._datasets = strategy, config, datasets
        self.per_replica = config.batch_size * config.accumulation_steps
        self.global_batch = self.per_replica * replicas
        self.eval_batch = config.batch_size * replicas
        self.train_examples = len(datasets.train)
        self.train_steps = data.steps_per_epoch(self.train_examples, self.global_batch)
        self.steps_per_loop = config.steps_per_loop
        self.jit_scope = loop.jit_scope(strategy, config.jit_compile, config.input)
        self.learning_rate = model.learning_rate(
            config.learning_rate,
            global_batch=self.global_batch,
            reference_batch=REFERENCE_BATCH,
            scale=config.scale_lr,
            warmup_steps=round(config.warmup_epochs * self.train_steps),
        )
        self.state = create_state(strategy, config, self.learning_rate)
        self._train = self._eval = None
        self.call_seconds = 0.0  # spent in training calls so far, in this process

        @tf.function
        def weights_finite() -> tf.Tensor:
            weights = self.state.model.weights
            return tf.reduce_all([tf.reduce_all(tf.math.is_finite(w)) for w in weights])

        self._weights_finite = weights_finite

    def step(self) -> int:
        """Optimizer steps taken so far, over every epoch."""
        return int(self.state.optimizer.iterations.numpy())

    def position(self) -> tuple[int, int]:
        """(finished epochs, steps taken in the current epoch)."""
        epoch = int(self.state.epoch.numpy())
        return epoch, self.step() - epoch * self.train_steps

    def weights_finite(self) -> bool:
        return bool(self._weights_finite())

    def rate_at(self, step: int) -> float:
        rate = self.learning_rate
        return float(rate(step)) if callable(rate) else float(rate)

    def _build_loops(self) -> None:
        config, strategy, datasets = self._config, self._strategy, self._datasets
        train_step = functools.partial(
            replica_train_step,
            self.state,
            self.global_batch,
            accumulation_steps=config.accumulation_steps,
        )
        eval_step = functools.partial(replica_eval_step, self.state)
        if config.input == "resident":
            self._train = loop.ResidentTrain(
                strategy,
                train_step,
                datasets.train,
                global_batch=self.global_batch,
                per_replica=self.per_replica,
                seed=config.seed,
                scope=self.jit_scope,
            )
            self._eval = loop.ResidentEval(
                strategy,
                eval_step,
                datasets.test,
                global_batch=self.eval_batch,
                scope=self.jit_scope,
            )
        else:
            epoch, step = self.position()
            train_fn = functools.partial(
                data.train_dataset,
                datasets.train,
                self.global_batch,
                config.seed,
                config.epochs,
                first_epoch=epoch,
                first_step=step,
            )
            eval_fn = functools.partial(data.eval_dataset, datasets.test, self.eval_batch)
            self._train = loop.StreamTrain(strategy, train_step, train_fn, self.jit_scope)
            self._eval = loop.StreamEval(
                strategy,
                eval_step,
                eval_fn,
                steps=data.eval_steps(len(datasets.test), self.eval_batch),
                scope=self.jit_scope,
            )

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
            "train_loss": sums["loss"],
            "train_accuracy": sums["accuracy"],
            "train_examples": sums["examples"],
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
        """Loss and accuracy over every test example, summed over every replica."""
        if self._eval is None:
            self._build_loops()
        self.state.test_sums.reset()
        self._eval.run()
        sums = self.state.test_sums.result()
        return {
            "test_loss": sums["loss"],
            "test_accuracy": sums["accuracy"],
            "test_examples": sums["examples"],
        }


# What a collective raises on the survivors when a peer dies, freezes or
# becomes unreachable (TensorFlow's coordination service notices missing
# heartbeats within seconds and aborts every pending collective).
_PEER_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.AbortedError,
    tf.errors.CancelledError,
    tf.errors.DeadlineExceededError,
    tf.errors.InternalError,
    tf.errors.UnknownError,
)
_TASK_NAME = re.compile(r"/job:(\w+)/(?:replica:\d+/)?task:(\d+)")


def run(
    config: Config,
    *,
    strategy: tf.distribute.Strategy | None = None,
    datasets: data.Mnist | None = None,
    flagfile: str | None = None,
    stop: stopping.Stop | None = None,
) -> Result | None:
    """Trains and evaluates for `config.epochs`, resuming from `config.model_dir`'s checkpoints.

    `strategy` and `datasets` replace the ones built from `config` (tests use
    this). `flagfile` is the text of a flagfile that replays the run; the
    chief writes it into `config.model_dir` with the other outputs. `stop`
    carries SIGTERM/SIGINT requests (see `tf_mgpu.engine.stopping`). Returns None
    when the model dir already holds every epoch asked for.
    """
    stop = stop or stopping.Stop()
    task = tf_config.task_from_env()
    chief_print = print if task.is_chief else (lambda *args, **kwargs: None)
    outputs = report.Outputs(config.model_dir if task.is_chief else None)
    # Inputs are checked before joining the cluster: a task that failed later
    # would leave its peers waiting for it.
    outputs.check()
    strategies.resolve(config.strategy, task, config.num_cpu_devices)
    if datasets is None:
        data.check_manual_dir(config.manual_dir)
    if config.clean:
        outputs.clean()  # before joining: no peer can be reading checkpoints yet
    if strategy is None:
        devices.grow_gpu_memory(config.memory_growth)
        devices.split_cpu(config.num_cpu_devices)
        supervisor.notify("joining")
        strategy = strategies.create(config.strategy, task)
        supervisor.notify("joined")
    multi_worker = task.num_workers > 1
    stop.start_training(strategy, multi_worker)
    if datasets is None:
        datasets = data.load_mnist(
            config.data_dir, config.manual_dir, config.train_split, config.test_split
        )
    trainer = Trainer(strategy, config, datasets)
    checkpoints = checkpoint.Checkpoints(
        trainer.state.checkpointed(), config.model_dir, is_chief=task.is_chief, warn=chief_print
    )
    logs = tensorboard.Summaries(config.model_dir if task.is_chief else None)
    try:
        return _train(strategy, task, config, trainer, checkpoints, outputs, logs, flagfile, stop)
    finally:
        logs.close()


def _train(
    strategy: tf.distribute.Strategy,
    task: tf_config.Task,
    config: Config,
    trainer: Trainer,
    checkpoints: checkpoint.Checkpoints,
    outputs: report.Outputs,
    logs: tensorboard.Summaries,
    flagfile: str | None,
    stop: stopping.Stop,
) -> Result | None:
    """`run` once the cluster, the data and the state exist: resume, train, save, export."""
    chief_print = print if task.is_chief else (lambda *args, **kwargs: None)
    multi_worker = task.num_workers > 1
    history = _resume(strategy, config, trainer, checkpoints, outputs, logs, flagfile, chief_print)
    epoch, _ = trainer.position()
    if epoch >= config.epochs:
        chief_print(
            f"tf_mgpu done: --model_dir={config.model_dir} already holds {epoch} epochs "
            f"(--epochs={config.epochs}); nothing to train. Raise --epochs to train on, or "
            f"pass --clean to start over",
            flush=True,
        )
        return None
    print(report.start_line(strategy, str(task), config, trainer.global_batch), flush=True)
    dropped = trainer.train_examples - trainer.train_steps * trainer.global_batch
    if dropped > 0.05 * trainer.train_examples:
        chief_print(report.dropped_line(dropped, trainer.train_examples, trainer.global_batch))
    supervisor.notify("alive")

    last_saved, last_logged, checkpoint_seconds = trainer.step(), trainer.step(), 0.0
    interval, seconds_seen = tensorboard.Interval(), trainer.call_seconds
    epoch_began = (0.0, 0.0)  # (examples, call seconds) when this process began the epoch
    bar = progress.Progress(enabled=task.is_chief)

    def save() -> None:
        nonlocal last_saved, checkpoint_seconds
        started = time.perf_counter()
        if not trainer.weights_finite():
            epoch, _ = trainer.position()
            raise Diverged(
                f"the weights are not finite after step {trainer.step():,} (epoch {epoch + 1}); "
                f"lower --learning_rate"
            )
        checkpoints.save(trainer.step())
        last_saved = trainer.step()
        checkpoint_seconds += time.perf_counter() - started
        supervisor.notify("alive")

    def observe(step: int, last: bool) -> None:
        """After a call: every --log_steps, and at the epoch's end, the curve; the bar.

        Reading the sums costs about half a millisecond, and is collective under
        MultiWorkerMirroredStrategy, so it happens at the curve's points,
        which every worker agrees on, and after every call only for a live
        bar in a single process.
        """
        nonlocal last_logged, seconds_seen
        point = step - last_logged >= config.log_steps or last
        if not (point or (bar.live and not multi_worker)):
            return
        loss, examples = trainer.state.train_sums.totals()
        interval.update(loss, examples, trainer.call_seconds - seconds_seen)
        seconds_seen = trainer.call_seconds
        if bar.live:
            seconds = max(trainer.call_seconds - epoch_began[1], 1e-9)
            done = step - trainer.position()[0] * trainer.train_steps
            bar.update(done, loss / max(examples, 1.0), (examples - epoch_began[0]) / seconds)
        if point:
            last_logged = step
            mean, speed = interval.take()
            logs.training(step, mean, speed, trainer.rate_at(step - 1))

    def between_calls(last: bool) -> None:
        supervisor.notify("alive")
        step = trainer.step()  # once per call: a read costs ~0.2 ms, every step at steps_per_loop=1
        observe(step, last)
        if last:  # the epoch's end saves and checks for a stop after evaluating
            return
        if stop.agreed():
            save()
            _finish_together(strategy)
            raise Stopped(_stopped(stop, checkpoints))
        if step - last_saved >= config.checkpoint_steps:
            save()

    try:
        for epoch in range(trainer.position()[0] + 1, config.epochs + 1):
            _, done = trainer.position()
            # A resumed epoch continues from its restored sums.
            sums = trainer.state.train_sums.totals() if done else (0.0, 0.0)
            interval.start_epoch(*sums)
            epoch_began = (sums[1], trainer.call_seconds)
            bar.start_epoch(epoch, config.epochs, trainer.train_steps, done)
            try:
                record = {"epoch": epoch, **trainer.train_epoch(between_calls)}
            finally:
                bar.end_epoch()
            record.update(trainer.evaluate())
            history.append(record)
            outputs.epoch(record)
            logs.epoch(trainer.step(), record)
            chief_print(report.epoch_line(record, config.epochs), flush=True)
            save()
            if epoch < config.epochs and stop.agreed():
                _finish_together(strategy)
                raise Stopped(_stopped(stop, checkpoints))
    except tf.errors.ResourceExhaustedError:
        raise UserError(out_of_memory(config, trainer)) from None
    except Diverged as e:
        kept = checkpoints.latest or "none was saved"
        raise Diverged(f"{e}; the last good checkpoint is kept: {kept}") from None
    except _PEER_ERRORS as e:
        if not multi_worker:
            raise
        raise PeerLost(_lost_peer(e, task, checkpoints)) from None
    except OSError as e:  # metrics.jsonl: a full or read-only disk
        raise UserError(
            checkpoints.cannot_write(f"into --model_dir={config.model_dir}", e)
        ) from None
    summary = _summary(strategy, task, config, trainer, history)
    summary["checkpoint_seconds"] = checkpoint_seconds
    workers_agree = _same_weights_everywhere(strategy, task, summary["weights_sha256"])
    _finish_together(strategy)
    try:
        outputs.finish(summary, trainer.state.model)
        if outputs.model_dir is not None:  # the chief
            export.save(trainer.state.model, outputs.model_dir)
    except OSError as e:
        raise UserError(
            checkpoints.cannot_write(f"into --model_dir={config.model_dir}", e)
        ) from None
    chief_print(report.final_line(summary), flush=True)
    chief_print(report.weights_line(summary["weights_sha256"], workers_agree), flush=True)
    return Result(summary=summary, state=trainer.state)


def _resume(
    strategy: tf.distribute.Strategy,
    config: Config,
    trainer: Trainer,
    checkpoints: checkpoint.Checkpoints,
    outputs: report.Outputs,
    logs: tensorboard.Summaries,
    flagfile: str | None,
    chief_print,
) -> list[dict]:
    """Restores the newest checkpoint if `config.model_dir` has one from this run.

    Returns the metrics of the epochs already done. Refuses a model dir that
    holds another run, or outputs without checkpoints.
    """
    current = checkpoint.fingerprint(
        trainer.state.model.weights,
        train_examples=trainer.train_examples,
        seed=config.seed,
        global_batch=trainer.global_batch,
        recipe=dataclasses.asdict(config),
    )
    saved = checkpoints.saved_fingerprint()
    if saved is not None:
        why = checkpoint.incompatibility(saved, current)
        if why:
            raise UserError(
                f"--model_dir={config.model_dir} holds a run with {why}; rerun with that "
                f"run's flags (its flags.txt) to resume it, pass --clean to start over "
                f"there, or choose another --model_dir"
            )
    restored = checkpoints.restore()
    if restored is None:
        if outputs.has_outputs():
            raise UserError(
                f"--model_dir={config.model_dir} holds another run's outputs but no "
                f"checkpoints to resume; pass --clean to start over there, or choose "
                f"another --model_dir"
            )
        checkpoints.record(current)
        outputs.begin(flagfile)
        logs.begin(hparams(config, trainer, strategy))
        _check_same_start(strategy, trainer)
        return []
    _check_same_start(strategy, trainer)
    epoch, step = trainer.position()
    if not 0 <= step <= trainer.train_steps:
        raise UserError(
            f"checkpoint {restored} is at step {trainer.step()} of epoch {epoch + 1}, which "
            f"does not fit {trainer.train_steps} steps per epoch; pass --clean to start over"
        )
    changed = checkpoint.changes(saved or {}, current)
    chief_print(
        f"tf_mgpu resume: from {restored} (step {trainer.step():,}: epoch {epoch + 1}, step "
        f"{step} of {trainer.train_steps})"
        + (f"; changed: {', '.join(changed)}" if changed else ""),
        flush=True,
    )
    checkpoints.record(current)
    logs.resume(trainer.step())
    return outputs.resume(epoch, flagfile)


def _check_same_start(strategy: tf.distribute.Strategy, trainer: Trainer) -> None:
    """Under MultiWorkerMirroredStrategy: every worker starts from the same step, or none does."""
    if strategies.name_of(strategy) != "multi_worker_mirrored":
        return
    here = float(trainer.step())
    if strategies.replica_sum(strategy)(here) != here * strategy.num_replicas_in_sync:
        raise UserError(
            f"the workers restored different checkpoints (this one is at step {int(here)}); "
            f"every worker must read the chief's --model_dir (shared storage across machines)"
        )


def hparams(config: Config, trainer: Trainer, strategy: tf.distribute.Strategy) -> dict:
    """The run's hyperparameters as TensorBoard's HParams dashboard shows them."""
    return {
        "strategy": strategies.name_of(strategy),
        "replicas": strategy.num_replicas_in_sync,
        "batch_size": config.batch_size,
        "accumulation_steps": config.accumulation_steps,
        "global_batch": trainer.global_batch,
        "learning_rate": config.learning_rate,
        "peak_learning_rate": model.peak_rate(trainer.learning_rate),
        "scale_lr": config.scale_lr,
        "warmup_epochs": config.warmup_epochs,
        "epochs": config.epochs,
        "seed": config.seed,
        "train_split": config.train_split,
        "input": config.input,
        "dtype": config.dtype,
        "steps_per_loop": config.steps_per_loop,
        "xla": trainer.jit_scope,
    }


def _finish_together(strategy: tf.distribute.Strategy) -> None:
    """Under MultiWorkerMirroredStrategy: one last all-reduce before any worker exits.

    A worker leaves a collective once it has every piece, while a peer may
    still be fetching that worker's last piece; if the first then exits (this
    program ends with `os._exit`, skipping TensorFlow's shutdown barrier), the
    peer fails with "Socket closed" in a collective that mattered (seen 1 run
    in about 10). After this one, nothing depends on a peer any more: a peer
    error here only means the others finished first, so it is ignored.
    """
    if strategies.name_of(strategy) != "multi_worker_mirrored":
        return

    with contextlib.suppress(*_PEER_ERRORS):
        strategies.replica_sum(strategy)(1.0)


def _same_weights_everywhere(
    strategy: tf.distribute.Strategy, task: tf_config.Task, digest: str
) -> int:
    """The number of workers that hold exactly these weights: all of them, or this raises.

    Under MultiWorkerMirroredStrategy each worker's sha256 is cut into 16-bit
    numbers; summing them and their squares over the replicas gives zero
    variance exactly when every worker's digest is the same (the sums are
    exact in float64). Only the chief reports it, so the others stay quiet.
    """
    if strategies.name_of(strategy) != "multi_worker_mirrored":
        return 1
    parts = [int(digest[i : i + 4], 16) for i in range(0, len(digest), 4)]
    sums = strategies.replica_sum(strategy)(parts + [p * p for p in parts])
    count = strategy.num_replicas_in_sync
    first, squares = sums[: len(parts)], sums[len(parts) :]
    if any(count * sq != s * s for s, sq in zip(first, squares, strict=True)):
        raise Failure(
            f"the workers ended with different weights (this one: sha256={digest}); "
            f"this is a bug in tf_mgpu, please report it with the workers' logs"
        )
    return task.num_workers


def _stopped(stop: stopping.Stop, checkpoints: checkpoint.Checkpoints) -> str:
    return f"{stop.requested}: saved {checkpoints.latest}; rerun the same command to resume from it"


def _lost_peer(error: Exception, task: tf_config.Task, checkpoints: checkpoint.Checkpoints) -> str:
    """One line naming the task that went away, from TensorFlow's error message."""
    names = {f"{kind}:{index}" for kind, index in _TASK_NAME.findall(str(error))} - {str(task)}
    peers = ", ".join(sorted(names)) or "a peer"
    last = checkpoints.latest or "none yet"
    reason = str(error).strip().splitlines()[0][:120]
    return (
        f"{task} lost {peers} during training ({type(error).__name__}: {reason}); last "
        f"checkpoint: {last}. Rerun the same command on every worker to resume"
    )


def out_of_memory(config: Config, trainer: Trainer) -> str:
    """The one line for a run that ran out of device memory, naming the batch and the fixes."""
    replicas = trainer.global_batch // trainer.per_replica
    return (
        f"out of memory at a global batch of {trainer.global_batch} "
        f"({config.batch_size} per replica x {replicas} replicas x "
        f"{config.accumulation_steps} accumulation steps); lower --batch_size, or raise "
        f"--accumulation_steps to keep the global batch with less memory per step"
    )


def _summary(
    strategy: tf.distribute.Strategy,
    task: tf_config.Task,
    config: Config,
    trainer: Trainer,
    history: list[dict],
) -> dict:
    train_seconds = sum(record["seconds"] for record in history)
    steady = history[1:] or history  # the first epoch also compiles
    return {
        "strategy": strategies.name_of(strategy),
        "task": str(task),
        "num_workers": task.num_workers,
        "replicas": strategy.num_replicas_in_sync,
        "devices": strategies.devices_of(strategy),
        "per_replica_batch": config.batch_size,
        "accumulation_steps": config.accumulation_steps,
        "global_batch": trainer.global_batch,
        "steps_per_epoch": trainer.train_steps,
        "learning_rate": model.peak_rate(trainer.learning_rate),
        "xla": trainer.jit_scope,
        "config": dataclasses.asdict(config),
        "history": history,
        "test_accuracy": history[-1]["test_accuracy"],
        "test_loss": history[-1]["test_loss"],
        "test_examples": history[-1]["test_examples"],
        "train_seconds": train_seconds,
        "examples_per_second": sum(r["train_examples"] for r in history) / train_seconds,
        "steady_examples_per_second": sum(r["train_examples"] for r in steady)
        / sum(r["seconds"] for r in steady),
        "first_epoch_seconds": history[0]["seconds"],
        "weights_sha256": report.weights_digest(trainer.state.model),
        "versions": report.versions(),
        **report.memory_use(),
    }
