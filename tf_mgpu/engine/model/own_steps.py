"""Which of Keras's steps a model's class brings of its own, and so which the engine runs.

A model whose class overrides `train_step`, `test_step` or `compute_loss` is trained or
evaluated by that step on each replica, as Keras's `fit` and `evaluate` run it
(`tf_mgpu.engine.step.replica_steps`); any other model by the engine's own step.
"""

import keras

from tf_mgpu.engine.model.compiled import overrides, trains_own_loss


def runs_own_step(net: keras.Model) -> bool:
    """Whether the model's class overrides `train_step` or `compute_loss`: then its
    `train_step` (Keras's own, calling that `compute_loss`) trains it, on each replica,
    as Keras's `fit` runs it."""
    return trains_own_loss(net)


def evaluates_own_step(net: keras.Model) -> bool:
    """Whether the model's class overrides `test_step` or `compute_loss`: then its
    `test_step` evaluates it on each replica, as Keras's `evaluate` runs it."""
    return overrides(net, "test_step") or overrides(net, "compute_loss")


def overridden(net: keras.Model) -> list[str]:
    """The step methods the model's class overrides, as 'Class.method'."""
    methods = ("train_step", "compute_loss", "test_step")
    return [f"{type(net).__name__}.{m}" for m in methods if overrides(net, m)]
