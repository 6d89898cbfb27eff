"""The optimizer's last word on the weights, said where Keras's `fit` says it.

`fit` ends, after its last epoch (or a callback's stop) and before `on_train_end`, with
`optimizer.finalize_variable_values(model.trainable_weights)`: an optimizer built with
`use_ema=True` sets each trained weight to its exponential moving average there. So does
this action, placed before the task's callbacks: a run stopped by a signal, which resumes
later, never finalizes; one that ends does, once, and `tf_mgpu.training` saves the final
checkpoint again with the averages, which a rerun of the finished run restores.
"""

import keras
import tensorflow as tf

from tf_mgpu.engine.control.controller import Action
from tf_mgpu.engine.distribute import collectives


def finalizes(optimizer) -> bool:
    """Whether `optimizer` sets the weights at the end: `use_ema`, or a
    `finalize_variable_values` of its own (a LossScaleOptimizer asks its inner one)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    own = (
        type(inner).finalize_variable_values
        is not keras.optimizers.Optimizer.finalize_variable_values
    )
    return bool(getattr(inner, "use_ema", False)) or own


def describe(optimizer) -> str:
    """How lines name what finalizing did: 'AdamW(use_ema=True) set the weights to their
    moving average'."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if getattr(inner, "use_ema", False):
        return f"{type(inner).__name__}(use_ema=True) set the weights to their moving average"
    return f"{type(inner).__name__}.finalize_variable_values set the weights"


class Finalize(Action):
    """Finalizes `trainer`'s weights once training ends (`changed` says whether they moved).

    Keras's TensorFlow optimizer assigns the averages with `strategy.extended.update`, in a
    cross-replica context: here between the compiled calls, inside `strategy.scope()`, so
    every replica's copy of a mirrored weight takes the same value.
    """

    def __init__(self, trainer, strategy: tf.distribute.Strategy):
        self._trainer, self._strategy = trainer, strategy
        self.changed = False

    def finish_training(self) -> None:
        state = self._trainer.state
        if not finalizes(state.optimizer):
            return
        model = state.model
        before = collectives.weights_digest(model)
        with self._strategy.scope():
            state.optimizer.finalize_variable_values(model.trainable_variables)
        # The same on every worker: their weights were the same before.
        self.changed = collectives.weights_digest(model) != before
