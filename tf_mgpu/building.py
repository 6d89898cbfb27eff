"""A run's parts, built before its first step, in the order `tf_mgpu.training` builds them.

This process's place in the cluster (`find_place`) and its batch there (`batch_for`); its
devices (`prepare_devices`); the task and the dtype it trains in (`load_task`); the
strategy, joined with the other workers (`join`); the splits (`load_splits`) and how they
are read (`input_for`); the `Trainer`, which builds the training state in the strategy's
scope, and the task's Keras callbacks (`build_trainer`); that state's checkpoints
(`checkpoints_for`). `Run` holds what the later phases share: resuming
(`tf_mgpu.resuming`), the start lines (`tf_mgpu.start_lines`), the epochs
(`tf_mgpu.training`) and the end (`tf_mgpu.finishing`).
"""

import dataclasses

import keras
import tensorflow as tf

from tf_mgpu import timing
from tf_mgpu.cluster import elastic, startup_checks, supervisor, tf_config
from tf_mgpu.config import DTYPES, KERAS_FLOATS, Config
from tf_mgpu.engine.control import callbacks
from tf_mgpu.engine.distribute import devices, strategies
from tf_mgpu.engine.faults import stopping
from tf_mgpu.engine.input import stream
from tf_mgpu.engine.input.data import Data
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import report, tensorboard
from tf_mgpu.tasks import adapter


@dataclasses.dataclass(frozen=True)
class Run:
    """What the phases of one run share, built once in `tf_mgpu.training.run`."""

    strategy: tf.distribute.Strategy
    node: tf_config.Node  # this process's place in the cluster
    config: Config
    trainer: Trainer
    checkpoints: checkpoint.Checkpoints
    outputs: report.Outputs
    logs: tensorboard.Summaries
    stop: stopping.Stop
    flagfile: str | None
    clock: timing.Phases
    callbacks: callbacks.Callbacks | None  # the task's Keras callbacks, if it has any

    @property
    def multi_worker(self) -> bool:
        return self.node.num_workers > 1

    def chief_print(self, *args, **kwargs) -> None:
        if self.node.is_chief:
            print(*args, **kwargs)


def find_place(config: Config) -> tuple[tf_config.Node, report.Outputs]:
    """This process's place in the cluster (TF_CONFIG), and its outputs (the chief's), both
    checked before it joins the cluster: a task that failed later would leave its peers
    waiting for it."""
    node = tf_config.node_from_env()
    outputs = report.Outputs(config.model_dir if node.is_chief else None)
    outputs.check()
    startup_checks.strategy(config.strategy, node, config.num_cpu_devices)
    return node, outputs


def batch_for(config: Config, node: tf_config.Node) -> Config:
    """`config` with --batch_size for this cluster: with --batch_workers, each replica's
    share of the same global batch on `node.num_workers` workers (the chief says so)."""
    batch = elastic.per_replica_batch(config.batch_size, config.batch_workers, node.num_workers)
    if batch != config.batch_size and node.is_chief:
        print(
            f"tf_mgpu batch: --batch_size={config.batch_size} is per replica on "
            f"--batch_workers={config.batch_workers} workers; on {node.num_workers} each "
            f"replica takes {batch}, for the same global batch",
            flush=True,
        )
    return dataclasses.replace(config, batch_size=batch)


def prepare_devices(config: Config) -> None:
    """--memory_growth and --num_cpu_devices, set before TensorFlow builds its devices (before
    the task file runs: it may create TensorFlow objects)."""
    devices.grow_gpu_memory(config.memory_growth)
    devices.split_cpu(config.num_cpu_devices)


def load_task(config: Config, task, stated_batch: int, splits_given: bool) -> tuple[Task, Config]:
    """The task (`task`, else --task) as the engine trains it, and `config` with the dtype it
    trains in. `stated_batch`: --batch_size as given, the batch --scale_lr's rate is for;
    `splits_given`: see `tf_mgpu.training.run`."""
    work = adapter.load(config.task if task is None else task)
    if splits_given:
        adapter.refuse_unread_splits(work, config)
    # --dtype, else the policy the task file set (float32 if none).
    if config.dtype is None and work.dtype not in (*DTYPES, *KERAS_FLOATS):
        raise UserError(
            f"{work.where} sets the dtype policy {work.dtype!r}; tf_mgpu trains under "
            f"{', '.join((*DTYPES, *KERAS_FLOATS))}: set one of them there, or pass --dtype"
        )
    config = dataclasses.replace(config, dtype=config.dtype or work.dtype)
    if config.batch_workers is not None:  # --scale_lr's rate is for the stated batch
        work = dataclasses.replace(work, reference_batch=work.reference_batch or stated_batch)
    return work, config


def join(config: Config, node: tf_config.Node) -> tf.distribute.Strategy:
    """The strategy --strategy names, which joins this process to the other workers (the
    supervisor is told before and after: joining waits for them)."""
    supervisor.notify("joining")
    strategy = strategies.create(config.strategy, node)
    supervisor.notify("joined")
    return strategy


def load_splits(work: Task, config: Config) -> Data:
    """The task's splits, as its load_data returns them."""
    # Seeded from --seed first: a tf.data shuffle given no seed, or NumPy's global
    # random, then draws the same in every worker's load_data (each worker reads
    # its share of one order) and in every run of the command.
    keras.utils.set_random_seed(config.seed)
    return work.load_data(config)


def input_for(config: Config, work: Task, datasets: Data) -> Config:
    """`config` with --input=stream where a split is a tf.data dataset; --stream_shard=file
    refused for any other kind of training split."""
    if config.stream_shard == "file" and not isinstance(datasets.train, stream.Stream):
        raise UserError(
            f"--stream_shard=file gives each worker its own files of a tf.data training "
            f"dataset; {work.where} returns another kind of training split: drop the flag"
        )
    if stream.streams(datasets):  # a task's tf.data input streams, whatever --input says
        config = dataclasses.replace(config, input="stream")
    return config


def build_trainer(
    strategy: tf.distribute.Strategy, config: Config, work: Task, datasets: Data
) -> tuple[Trainer, Config, callbacks.Callbacks | None]:
    """The Trainer, which checks and places the splits and builds the training state in the
    strategy's scope; `config` as the Trainer resolved it; the task's Keras callbacks."""
    trainer = Trainer(strategy, config, work, datasets)
    # --input=auto resolved; the optimizer's gradient_accumulation_steps taken as ours.
    config = dataclasses.replace(
        config, input=trainer.input_mode, accumulation_steps=trainer.accumulation_steps
    )
    keras_callbacks = callbacks.from_task(
        work,
        trainer,
        strategy,
        epochs=config.epochs,
        flag_rate=config.learning_rate,
        validation=datasets.validation is not None,
    )
    return trainer, config, keras_callbacks


def checkpoints_for(
    trainer: Trainer,
    config: Config,
    node: tf_config.Node,
    keras_callbacks: callbacks.Callbacks | None,
) -> checkpoint.Checkpoints:
    """The checkpoints of the training state in --model_dir, with the callbacks' state and a
    tf.data split's place in its data (`checkpoint.Checkpoints`); the chief prints warnings."""
    return checkpoint.Checkpoints(
        trainer.state.checkpointed(),
        config.model_dir,
        is_chief=node.is_chief,
        warn=print if node.is_chief else (lambda *args, **kwargs: None),
        extra=keras_callbacks,
        inputs=trainer.stream_loop,
        may_lack=trainer.state.may_lack,
        settle=trainer.state.settle,
    )
