"""One training loop for every tf.distribute strategy.

A custom loop, not `model.fit`: Keras 3's `fit` fails under
MultiWorkerMirroredStrategy (keras-team/keras#20585), while `strategy.run`
inside `tf.function` works the same on one device, N GPUs and N machines.
"""

import dataclasses
import functools
import time

import keras
import tensorflow as tf

from tf_mgpu import cluster, data, devices, loop, metrics, model, report, strategies
from tf_mgpu.config import REFERENCE_BATCH, Config
from tf_mgpu.errors import UserError


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


def _gradients(state: TrainState, global_batch: int, images, labels) -> list[tf.Tensor]:
    """This replica's share of the gradient of the mean loss over the global batch."""
    with tf.GradientTape() as tape:
        logits = _logits(state, images, training=True)
        per_example = _per_example_loss(labels, logits)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    state.train_sums.update(per_example, logits, labels)
    return tape.gradient(loss, state.model.trainable_variables)


def replica_train_step(
    state: TrainState, global_batch: int, images, labels, accumulation_steps: int = 1
) -> None:
    """One SGD step on one replica's share of a global batch.

    The loss is summed over this replica's examples and divided by the global
    batch; the optimizer sums gradients over replicas, so every replica
    applies the gradient of the mean loss over the whole global batch.

    With `accumulation_steps` K > 1 the share arrives as K micro-batches
    (consecutive runs of `len(images) / K` examples): their gradients are
    summed here, one at a time, so only one micro-batch's activations live
    at once, and the optimizer all-reduces and applies once per step.
    """
    variables = state.model.trainable_variables
    if accumulation_steps == 1:
        grads = _gradients(state, global_batch, images, labels)
    else:
        micro = images.shape[0] // accumulation_steps
        grads = [tf.zeros_like(v) for v in variables]
        for j in tf.range(accumulation_steps):
            rows = j * micro + tf.range(micro)
            more = _gradients(state, global_batch, tf.gather(images, rows), tf.gather(labels, rows))
            grads = [g + d for g, d in zip(grads, more, strict=True)]
    state.optimizer.apply_gradients(zip(grads, variables, strict=True))


def replica_eval_step(state: TrainState, images, labels, weights) -> None:
    logits = _logits(state, images, training=False)
    state.test_sums.update(_per_example_loss(labels, logits), logits, labels, weights)


class Trainer:
    """The training state and its compiled loops, fed as `config.input` says."""

    def __init__(self, strategy: tf.distribute.Strategy, config: Config, datasets: data.Mnist):
        replicas = strategy.num_replicas_in_sync
        self.per_replica = config.batch_size * config.accumulation_steps
        self.global_batch = self.per_replica * replicas
        self.eval_batch = config.batch_size * replicas
        self.train_steps = data.steps_per_epoch(len(datasets.train), self.global_batch)
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
        self.first_epoch = int(self.state.epoch.numpy())
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
            train_fn = functools.partial(
                data.train_dataset,
                datasets.train,
                self.global_batch,
                config.seed,
                config.epochs,
                first_epoch=self.first_epoch,
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

    def train_epoch(self) -> dict:
        """One epoch of SGD, `steps_per_loop` steps per call; collective under MWMS."""
        self.state.train_sums.reset()
        epoch = int(self.state.epoch.numpy())
        started = time.perf_counter()
        for first in range(0, self.train_steps, self.steps_per_loop):
            self._train.run(epoch, first, min(self.steps_per_loop, self.train_steps - first))
        sums = self.state.train_sums.result()  # reading the sums waits for the last step
        seconds = time.perf_counter() - started
        self.state.epoch.assign_add(1)
        return {
            "train_loss": sums["loss"],
            "train_accuracy": sums["accuracy"],
            "train_examples": sums["examples"],
            "examples_per_second": sums["examples"] / seconds,
            "seconds": seconds,
        }

    def evaluate(self) -> dict:
        """Loss and accuracy over every test example, summed over every replica."""
        self.state.test_sums.reset()
        self._eval.run()
        sums = self.state.test_sums.result()
        return {
            "test_loss": sums["loss"],
            "test_accuracy": sums["accuracy"],
            "test_examples": sums["examples"],
        }


def run(
    config: Config,
    *,
    strategy: tf.distribute.Strategy | None = None,
    datasets: data.Mnist | None = None,
    flagfile: str | None = None,
) -> Result:
    """Trains and evaluates for `config.epochs`; the chief prints and writes the results.

    `strategy` and `datasets` replace the ones built from `config` (tests use
    this). `flagfile` is the text of a flagfile that replays the run; the
    chief writes it into `config.model_dir` with the other outputs.
    """
    task = cluster.task_from_env()
    outputs = report.Outputs(config.model_dir if task.is_chief else None)
    # Inputs are checked before joining the cluster: a task that failed later
    # would leave its peers waiting for it.
    outputs.check()
    if datasets is None:
        data.check_manual_dir(config.manual_dir)
    if strategy is None:
        devices.grow_gpu_memory(config.memory_growth)
        devices.split_cpu(config.num_cpu_devices)
        strategy = strategies.create(config.strategy, task, startup_timeout=config.startup_timeout)
    if datasets is None:
        datasets = data.load_mnist(
            config.data_dir, config.manual_dir, config.train_split, config.test_split
        )
    trainer = Trainer(strategy, config, datasets)
    print(report.start_line(strategy, str(task), config, trainer.global_batch), flush=True)
    outputs.begin(flagfile)
    history = []
    try:
        for epoch in range(trainer.first_epoch + 1, config.epochs + 1):
            record = {"epoch": epoch, **trainer.train_epoch(), **trainer.evaluate()}
            history.append(record)
            outputs.epoch(record)
            if task.is_chief:
                print(report.epoch_line(record, config.epochs), flush=True)
    except tf.errors.ResourceExhaustedError:
        raise UserError(out_of_memory(config, trainer)) from None
    summary = _summary(strategy, task, config, trainer, history)
    outputs.finish(summary, trainer.state.model)
    if task.is_chief:
        print(report.final_line(summary), flush=True)
    print(report.weights_line(str(task), summary["weights_sha256"]), flush=True)
    return Result(summary=summary, state=trainer.state)


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
    task: cluster.Task,
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
        **report.memory_use(),
    }
