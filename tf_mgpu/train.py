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

from tf_mgpu import cluster, data, devices, metrics, model, report, strategies
from tf_mgpu.config import Config


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


def create_state(strategy: tf.distribute.Strategy, config: Config) -> TrainState:
    """Builds model, optimizer and counters in `strategy.scope()`, so they are mirrored."""
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
        net = model.build_model()
        optimizer = model.build_optimizer(config.learning_rate)
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


def replica_train_step(state: TrainState, global_batch: int, images, labels) -> None:
    """One SGD step on one replica's share of a global batch.

    The loss is summed over this replica's examples and divided by the global
    batch; the optimizer sums gradients over replicas, so every replica
    applies the gradient of the mean loss over the whole global batch.
    """
    with tf.GradientTape() as tape:
        logits = state.model(images, training=True)
        per_example = _per_example_loss(labels, logits)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    variables = state.model.trainable_variables
    state.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
    state.train_sums.update(per_example, logits, labels)


def replica_eval_step(state: TrainState, images, labels, weights) -> None:
    logits = state.model(images, training=False)
    state.test_sums.update(_per_example_loss(labels, logits), logits, labels, weights)


def distributed_step(strategy: tf.distribute.Strategy, replica_fn):
    """A tf.function that runs `replica_fn` on every replica with the iterator's next batch."""

    @tf.function
    def step(iterator):
        strategy.run(replica_fn, args=next(iterator))

    return step


class Trainer:
    """The training state and its compiled steps, fed by one iterator per split for the run."""

    def __init__(self, strategy: tf.distribute.Strategy, config: Config, datasets: data.Mnist):
        self.global_batch = config.batch_size * strategy.num_replicas_in_sync
        self.train_steps = data.steps_per_epoch(len(datasets.train), self.global_batch)
        self.eval_steps = data.eval_steps(len(datasets.test), self.global_batch)
        self.state = create_state(strategy, config)
        self.first_epoch = int(self.state.epoch.numpy())
        self._train_step = distributed_step(
            strategy, functools.partial(replica_train_step, self.state, self.global_batch)
        )
        self._eval_step = distributed_step(
            strategy, functools.partial(replica_eval_step, self.state)
        )
        train_fn = functools.partial(
            data.train_dataset,
            datasets.train,
            self.global_batch,
            config.seed,
            config.epochs,
            first_epoch=self.first_epoch,
        )
        eval_fn = functools.partial(data.eval_dataset, datasets.test, self.global_batch)
        self._train_batches = iter(strategy.distribute_datasets_from_function(train_fn))
        self._test_batches = iter(strategy.distribute_datasets_from_function(eval_fn))

    def train_epoch(self) -> dict:
        """One epoch of SGD; collective under MultiWorkerMirroredStrategy."""
        self.state.train_sums.reset()
        started = time.perf_counter()
        for _ in range(self.train_steps):
            self._train_step(self._train_batches)
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
        for _ in range(self.eval_steps):
            self._eval_step(self._test_batches)
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
        devices.split_cpu(config.num_cpu_devices)
        strategy = strategies.create(config.strategy, task, startup_timeout=config.startup_timeout)
    print(report.start_line(strategy, str(task), config.batch_size), flush=True)
    if datasets is None:
        datasets = data.load_mnist(
            config.data_dir, config.manual_dir, config.train_split, config.test_split
        )
    trainer = Trainer(strategy, config, datasets)
    outputs.begin(flagfile)
    history = []
    for epoch in range(trainer.first_epoch + 1, config.epochs + 1):
        record = {"epoch": epoch, **trainer.train_epoch(), **trainer.evaluate()}
        history.append(record)
        outputs.epoch(record)
        if task.is_chief:
            print(report.epoch_line(record, config.epochs), flush=True)
    summary = _summary(strategy, task, config, trainer, history)
    outputs.finish(summary, trainer.state.model)
    if task.is_chief:
        print(report.final_line(summary), flush=True)
    print(report.weights_line(str(task), summary["weights_sha256"]), flush=True)
    return Result(summary=summary, state=trainer.state)


def _summary(
    strategy: tf.distribute.Strategy,
    task: cluster.Task,
    config: Config,
    trainer: Trainer,
    history: list[dict],
) -> dict:
    train_seconds = sum(record["seconds"] for record in history)
    return {
        "strategy": strategies.name_of(strategy),
        "task": str(task),
        "num_workers": task.num_workers,
        "replicas": strategy.num_replicas_in_sync,
        "devices": strategies.devices_of(strategy),
        "per_replica_batch": config.batch_size,
        "global_batch": trainer.global_batch,
        "steps_per_epoch": trainer.train_steps,
        "config": dataclasses.asdict(config),
        "history": history,
        "test_accuracy": history[-1]["test_accuracy"],
        "test_loss": history[-1]["test_loss"],
        "test_examples": history[-1]["test_examples"],
        "train_seconds": train_seconds,
        "examples_per_second": sum(r["train_examples"] for r in history) / train_seconds,
        "weights_sha256": report.weights_digest(trainer.state.model),
        **report.memory_use(),
    }
