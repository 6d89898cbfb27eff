"""What a run reports about itself: the summary the chief writes, and TensorBoard's hparams.

Every key of the summary is declared, with its meaning, in `tf_mgpu.outputs.fields`.
"""

import dataclasses

import tensorflow as tf

from tf_mgpu.cluster import tf_config
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import collectives, strategies
from tf_mgpu.engine.model import schedules
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.outputs import report


def hparams(config: Config, trainer: Trainer, strategy: tf.distribute.Strategy) -> dict:
    """The run's hyperparameters as TensorBoard's HParams dashboard shows them."""
    return {
        "strategy": strategies.name_of(strategy),
        "replicas": strategy.num_replicas_in_sync,
        "batch_size": config.batch_size,
        "accumulation_steps": config.accumulation_steps,
        "global_batch": trainer.global_batch,
        "learning_rate": trainer.rate_at(0),
        # TensorBoard's HParams take numbers: NaN where no peak is known (a schedule).
        "peak_learning_rate": _or_nan(schedules.peak_rate(trainer.learning_rate)),
        "task": trainer.task.name,
        "scale_lr": config.scale_lr,
        "warmup_epochs": config.warmup_epochs,
        "epochs": config.epochs,
        "seed": config.seed,
        "train_split": config.train_split,
        "input": config.input,
        "dtype": trainer.state.model.dtype_policy.name,  # build_model may set its own
        "steps_per_loop": config.steps_per_loop,
        "xla": trainer.jit_scope,
    }


def summary(
    strategy: tf.distribute.Strategy,
    node: tf_config.Node,
    config: Config,
    trainer: Trainer,
    history: list[dict],
) -> dict:
    train_seconds = sum(record["seconds"] for record in history)
    steady = history[1:] or history  # the first epoch also warms up (caches, threads)
    return {
        "strategy": strategies.name_of(strategy),
        "task": str(node),
        "num_workers": node.num_workers,
        "replicas": strategy.num_replicas_in_sync,
        "devices": strategies.devices_of(strategy),
        "per_replica_batch": config.batch_size,
        "accumulation_steps": config.accumulation_steps,
        "global_batch": trainer.global_batch,
        "steps_per_epoch": trainer.train_steps,
        "steps_per_call": trainer.pace.count,  # what the last calls ran (tf_mgpu.engine.step.pace)
        **schedules.describe(trainer.learning_rate),
        "task_name": trainer.task.name,
        "dtype": trainer.state.model.dtype_policy.name,
        "xla": trainer.jit_scope,
        "xla_reason": trainer.jit.reason,
        "config": dataclasses.asdict(config),
        "history": history,
        # test_loss, test_<metric> for every compiled metric, test_examples
        **{key: value for key, value in history[-1].items() if key.startswith(("test_", "val_"))},
        "train_seconds": train_seconds,
        "examples_per_second": sum(r["train_examples"] for r in history) / train_seconds,
        "steady_examples_per_second": sum(r["train_examples"] for r in steady)
        / sum(r["seconds"] for r in steady),
        "first_epoch_seconds": history[0]["seconds"],
        "weights_sha256": collectives.weights_digest(trainer.state.model),
        "versions": report.versions(),
        **report.memory_use(),
    }


def _or_nan(value: float | None) -> float:
    return float("nan") if value is None else value
