"""What every reference loop of the benchmark shares: its batch, its epochs' clock, its result.

The MNIST loops (`tf_mgpu.tools.benchmarks.baselines`) and the task's loops
(`tf_mgpu.tools.benchmarks.task_fit`) train at batch 64 and return the same dict:
`epoch_seconds` (training steps only, one entry per epoch, timed the same way in every
loop: wall clock around the epoch's steps, after a value is read back),
`train_examples_per_epoch`, `test_accuracy` and `peak_memory_mib` (this process's peak
RSS). Keras is imported inside `epoch_timer`: the seed's process must not pay for it.
"""

import resource
import time

BATCH_SIZE = 64


def result(epoch_seconds: list[float], examples: int, test_accuracy: float) -> dict:
    return {
        "epoch_seconds": epoch_seconds,
        "train_examples_per_epoch": examples,
        "test_accuracy": test_accuracy,
        "peak_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def epoch_timer():
    """A Keras callback whose `seconds` lists each epoch's training time."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_epoch_begin(self, epoch, logs=None):
            self._started = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            # Reading a weight back waits for the epoch's last update.
            keras.ops.convert_to_numpy(self.model.trainable_weights[-1])
            self.seconds.append(time.perf_counter() - self._started)

    return EpochTimer()
