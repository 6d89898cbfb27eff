"""What a run prints, and the files its chief leaves in --model_dir."""

import hashlib
import json
import os
import resource

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import strategies

SUMMARY = "summary.json"
METRICS = "metrics.jsonl"
FLAGS = "flags.txt"
WEIGHTS = "model.weights.h5"


def start_line(strategy: tf.distribute.Strategy, task: str, batch_size: int) -> str:
    replicas = strategy.num_replicas_in_sync
    devices = ",".join(strategy.extended.worker_devices)
    return (
        f"tf_mgpu start: strategy={strategies.name_of(strategy)} task={task} replicas={replicas} "
        f"devices={devices} batch_size={batch_size}/replica global_batch={batch_size * replicas}"
    )


def epoch_line(record: dict, epochs: int) -> str:
    width = len(str(epochs))
    return (
        f"epoch {record['epoch']:{width}d}/{epochs}"
        f"  train_loss {record['train_loss']:.4f}  train_acc {record['train_accuracy']:.4f}"
        f"  test_loss {record['test_loss']:.4f}  test_acc {record['test_accuracy']:.4f}"
        f"  {record['examples_per_second']:,.0f} ex/s  {record['seconds']:.1f} s"
    )


def final_line(summary: dict) -> str:
    return (
        f"tf_mgpu done: test_acc {summary['test_accuracy']:.4f}"
        f"  test_loss {summary['test_loss']:.4f}"
        f"  {summary['examples_per_second']:,.0f} ex/s over {summary['train_seconds']:.1f} s"
        f"  peak host memory {summary['peak_host_memory_mib']:,.0f} MiB"
    )


def weights_line(task: str, model: keras.Model) -> str:
    """Printed by every task: equal digests mean bit-identical weights."""
    return f"tf_mgpu weights: task={task} sha256={weights_digest(model)}"


def weights_digest(model: keras.Model) -> str:
    digest = hashlib.sha256()
    for weight in model.weights:
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(weight)).tobytes())
    return digest.hexdigest()


def memory_use() -> dict:
    """Peak memory of this process, and of each GPU where TensorFlow reports it."""
    usage = {"peak_host_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        usage["peak_gpu_memory_mib"] = {
            gpu.name: tf.config.experimental.get_memory_info(gpu.name)["peak"] / 2**20
            for gpu in gpus
        }
    return usage


class Outputs:
    """The chief's files in `model_dir`; built with `model_dir=None` it writes nothing.

    Nothing is written until training starts, so a run that fails validation
    leaves an earlier run's files as they were.
    """

    def __init__(self, model_dir: str | None):
        self.model_dir = model_dir

    def begin(self, flagfile: str | None) -> None:
        """Starts a fresh metrics log and records the flags the run can be replayed with."""
        if self.model_dir is None:
            return
        os.makedirs(self.model_dir, exist_ok=True)
        open(self._path(METRICS), "w").close()
        if flagfile is not None:
            self._write(FLAGS, flagfile)

    def epoch(self, record: dict) -> None:
        if self.model_dir is not None:
            with open(self._path(METRICS), "a") as log:
                log.write(json.dumps(record) + "\n")

    def finish(self, summary: dict, model: keras.Model) -> None:
        if self.model_dir is None:
            return
        model.save_weights(self._path(WEIGHTS))
        self._write(SUMMARY, json.dumps(summary, indent=2) + "\n")

    def _path(self, name: str) -> str:
        return os.path.join(self.model_dir, name)

    def _write(self, name: str, text: str) -> None:
        """Writes whole or not at all: a reader never sees half a file."""
        partial = self._path(name + ".partial")
        with open(partial, "w") as f:
            f.write(text)
        os.replace(partial, self._path(name))
