"""The learning rate of a run: the compiled optimizer's, unless the flags change it.

`--learning_rate` replaces the compiled rate; `--scale_lr` applies the linear
scaling rule to whichever rate applies, after `--warmup_epochs` of warmup.
"""

import keras
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError


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


def peak_rate(rate) -> float | None:
    """The largest rate a float or LinearWarmup reaches; None for another schedule or a
    callable, whose peak only running it would tell (see `describe`)."""
    if isinstance(rate, LinearWarmup):
        return rate.peak
    if callable(rate):
        return None
    return float(rate)


def describe(rate) -> dict:
    """How the summary records the rate: `learning_rate` (the peak where known) and, for a
    schedule or a callable, `learning_rate_schedule`: Keras's own serialized form of it,
    or the callable's name."""
    described = {"learning_rate": peak_rate(rate)}
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        described["learning_rate_schedule"] = keras.saving.serialize_keras_object(rate)
    elif callable(rate):
        described["learning_rate_schedule"] = {
            "callable": getattr(rate, "__qualname__", type(rate).__name__)
        }
    return described


def rate_at(rate, step: int) -> float:
    """The rate at optimizer step `step`; a callable (Keras calls it with no argument)
    gives its current value."""
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        return float(rate(step))
    if callable(rate):
        return float(rate())
    return float(rate)


def inner(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    """The optimizer that holds the rate: a LossScaleOptimizer's inner one, or itself."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def apply(
    optimizer: keras.optimizers.Optimizer,
    config: Config,
    *,
    global_batch: int,
    reference_batch: int,
    warmup_steps: int,
    where: str,
):
    """Sets the run's rate on the compiled `optimizer` when the flags ask; returns the rate."""
    optimizer = inner(optimizer)
    compiled = internals.learning_rate(optimizer)  # the float variable, a schedule or a callable
    if config.learning_rate is None and not config.scale_lr:
        if callable(compiled):  # a schedule or a function; the float is a keras.Variable
            return compiled
        return float(compiled.numpy())
    if callable(compiled):  # a schedule or a function; the float is a keras.Variable
        raise UserError(
            f"{where}: the compiled optimizer follows a learning rate schedule "
            f"({type(compiled).__name__}), which --learning_rate and --scale_lr cannot "
            f"change; drop those flags or compile with a constant rate"
        )
    base = config.learning_rate if config.learning_rate is not None else float(compiled.numpy())
    rate = learning_rate(
        base,
        global_batch=global_batch,
        reference_batch=reference_batch,
        scale=config.scale_lr,
        warmup_steps=warmup_steps,
    )
    optimizer.learning_rate = rate
    return rate
