"""What a run prints, and the files its chief leaves in --model_dir."""

import hashlib
import json
import os
import resource

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import strategies
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError

SUMMARY = "summary.json"
METRICS = "metrics.jsonl"
FLAGS = "flags.txt"
WEIGHTS = "model.weights.h5"


def start_line(
    strategy: tf.distribute.Strategy, task: str, config: Config, global_batch: int
) -> str:
    replicas = strategy.num_replicas_in_sync
    devices = ",".join(strategies.devices_of(strategy))
    accumulation = (
        f" x {config.accumulation_steps} accumulation steps"
        if config.accumulation_steps > 1
        else ""
    )
    return (
        f"tf_mgpu start: strategy={strategies.name_of(strategy)} task={task} replicas={replicas} "
        f"devices={devices} batch_size={config.batch_size}/replica{accumulation} "
        f"global_batch={global_batch} input={config.input} steps_per_loop={config.steps_per_loop}"
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


def weights_line(task: str, digest: str) -> str:
    """Printed by every task: equal digests mean bit-identical weights."""
    return f"tf_mgpu weights: task={task} sha256={digest}"


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

    During the run, flags and per-epoch metrics go to `*.partial` files; at the
    end every file is renamed into place, summary last. So `model_dir` holds
    one complete run's outputs at any time: a run that fails or is killed
    leaves the previous run's files as they were, beside its own partial ones.
    """

    def __init__(self, model_dir: str | None):
        self.model_dir = model_dir

    def check(self) -> None:
        """Creates `model_dir` and checks it is writable, before any work starts."""
        if self.model_dir is None:
            return
        try:
            os.makedirs(self.model_dir, exist_ok=True)
        except OSError as e:
            raise UserError(
                f"--model_dir={self.model_dir} cannot be created ({e.strerror}); "
                f"choose a folder you can write to"
            ) from None
        if not os.access(self.model_dir, os.W_OK | os.X_OK):
            raise UserError(
                f"--model_dir={self.model_dir} is not writable; choose a folder you can write to"
            )

    def begin(self, flagfile: str | None) -> None:
        """Starts this run's metrics log and records the flags that replay it; after `check`."""
        if self.model_dir is None:
            return
        open(self._partial(METRICS), "w").close()
        if flagfile is not None:
            with open(self._partial(FLAGS), "w") as f:
                f.write(flagfile)

    def epoch(self, record: dict) -> None:
        if self.model_dir is not None:
            with open(self._partial(METRICS), "a") as log:
                log.write(json.dumps(record) + "\n")

    def finish(self, summary: dict, model: keras.Model) -> None:
        """Writes the weights and summary, then puts every file of this run in place."""
        if self.model_dir is None:
            return
        # Keras insists that a weights file's name ends in .weights.h5.
        partial_weights = self._path("partial." + WEIGHTS)
        model.save_weights(partial_weights)
        with open(self._partial(SUMMARY), "w") as f:
            f.write(json.dumps(summary, indent=2) + "\n")
        os.replace(partial_weights, self._path(WEIGHTS))
        for name in (METRICS, FLAGS, SUMMARY):
            if os.path.exists(self._partial(name)):
                os.replace(self._partial(name), self._path(name))

    def _path(self, name: str) -> str:
        return os.path.join(self.model_dir, name)

    def _partial(self, name: str) -> str:
        return self._path(name + ".partial")
