"""The seed's network and optimizer, as Keras 3 objects.

Both must be built inside `strategy.scope()`: that is what makes their
variables mirrored, one synchronised copy per replica.
"""

import keras
import tensorflow as tf


def build_model() -> keras.Model:
    """Flatten 28x28 -> Dense 128 relu -> Dense 10; outputs logits."""
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ],
        name="mnist_mlp",
    )


def build_optimizer(learning_rate) -> keras.optimizers.Optimizer:
    """Plain SGD, the seed's optimizer; `learning_rate` is a float or a schedule."""
    return keras.optimizers.SGD(learning_rate=learning_rate)


@keras.saving.register_keras_serializable(package="tf_mgpu")
class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """`start` rising linearly to `peak` over `warmup_steps` optimizer steps, then `peak`.

    The gradual warmup of Goyal et al. 2017 (arXiv:1706.02677): a large
    global batch starts at the rate of the small one, so the first steps,
    taken from random weights, do not diverge.
    """

    def __init__(self, start: float, peak: float, warmup_steps: int):
        self.start, self.peak, self.warmup_steps = start, peak, warmup_steps

    def __call__(self, step):
        done = tf.minimum(tf.cast(step, tf.float32) / self.warmup_steps, 1.0)
        return self.start + (self.peak - self.start) * done

    def get_config(self) -> dict:
        return {"start": self.start, "peak": self.peak, "warmup_steps": self.warmup_steps}


def learning_rate(
    base: float,
    *,
    global_batch: int,
    reference_batch: int,
    scale: bool,
    warmup_steps: int,
):
    """The rate for a run: `base`, or with `scale` the linear scaling rule.

    Scaled, the rate is `base x global_batch / reference_batch`, reached by
    a linear warmup from `base` over `warmup_steps` when it is larger.
    Returns a float when the rate is constant, a schedule otherwise.
    """
    if not scale:
        return base
    peak = base * global_batch / reference_batch
    if warmup_steps <= 0 or peak <= base:
        return peak
    return LinearWarmup(base, peak, warmup_steps)


def peak_rate(rate) -> float:
    """The largest rate a float or LinearWarmup reaches."""
    return rate.peak if isinstance(rate, LinearWarmup) else float(rate)
