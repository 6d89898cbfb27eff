"""What a model's own train_step builds on its first call, built first in the strategy's
scope: the optimizers it was given (a GAN's d_optimizer and g_optimizer), compile's loss
and metrics where the model has no call() of its own, or its train_step hands them other
outputs than its call() returns (Keras builds them from a forward pass
before the first step; such a model has none), and keras.random's unseeded generator where
its train_step draws from it (`unseeded`). And the logs its steps return.

Built inside the compiled step on each replica, their variables could not be made mirrored
(TensorFlow cannot lift them out of the replica's graph: "UnliftableError"; Keras's fit on
several replicas fails there too). Each is found by tracing train_step on the replicas, never
running it, up to the point it would build: it is then built in the scope, outside any
replica, from what it was given, and the trace tried again for the next.
"""

import weakref

import keras
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine.model import unseeded
from tf_mgpu.engine.model.compiled import has_call
from tf_mgpu.engine.model.step_logs import StepLogs


class _Builds(Exception):  # noqa: N818 (stops a probe trace: not an error)
    """Raised where a lazily built object would build, with what it was given."""

    def __init__(self, owner, args):
        super().__init__()
        self.owner, self.args = owner, args


def _batch(x, y, w):
    """(x, y, sample_weight) as Keras's fit hands a train_step its data."""
    y = None if isinstance(y, tuple) and not y else y
    return tf.nest.map_structure(tf.constant, keras.utils.pack_x_y_sample_weight(x, y, w))


_LATER: "weakref.WeakSet[keras.Model]" = weakref.WeakSet()


def build_compiled_later(net: keras.Model) -> None:
    """Leaves compile's loss and metrics to be built from the model's train_step (`build`):
    they could not be from its call()'s outputs."""
    _LATER.add(net)


def _lazy(net: keras.Model) -> list:
    optimizers = [v for v in vars(net).values() if isinstance(v, keras.optimizers.Optimizer)]
    lazy = [o for o in optimizers if o is not net.optimizer]
    if not has_call(net) or net in _LATER:
        lazy += internals.compiled_holders(net)
    return [o for o in lazy if not o.built]


class _Unseeded:
    """keras.random's unseeded generator during a probe: a draw stops the trace."""

    built = False

    def next(self, ordered=True):
        raise _Builds(self, ())


def _eager(value):
    """A traced tensor's stand-in for building: zeros of its shape (a batch of one)."""
    if not isinstance(value, tf.Tensor):
        return value
    return tf.zeros([1 if d is None else d for d in value.shape], value.dtype)


def _build_found(found: _Builds) -> None:
    owner = found.owner
    if isinstance(owner, _Unseeded):
        internals.set_global_seed_generator(keras.random.SeedGenerator())
    elif isinstance(owner, keras.optimizers.Optimizer):
        type(owner).build(owner, list(found.args[0]))
    else:
        type(owner).build(owner, *tf.nest.map_structure(_eager, found.args))


def build(strategy: tf.distribute.Strategy, net: keras.Model, x, y, w) -> None:
    """Builds, in the strategy's scope, what the model's own train_step would build on its
    first call (see the module's docstring)."""
    lazy = _lazy(net)
    if unseeded.made() is None:  # does its train_step draw without a seed?
        lazy.append(_Unseeded())
        internals.set_global_seed_generator(lazy[-1])
    try:
        _probe(strategy, net, lazy, _batch(x, y, w))
    finally:  # no draw: Keras makes a generator of its own if the step ever draws
        if isinstance(internals.global_seed_generator(), _Unseeded):
            internals.set_global_seed_generator(None)


def _probe(strategy: tf.distribute.Strategy, net: keras.Model, lazy: list, data) -> None:
    for _ in range(len(lazy)):
        for owner in lazy:
            if not owner.built:

                def stop(*args, owner=owner):
                    raise _Builds(owner, args)

                owner.__dict__["build"] = stop  # on these objects, for this trace only
        try:
            step = unseeded.carried(net.train_step)
            probe = tf.function(lambda s=step: strategy.run(s, args=(data,)), autograph=False)
            probe.get_concrete_function()
            return
        except _Builds as found:
            with strategy.scope():
                _build_found(found)
        finally:
            for owner in lazy:
                owner.__dict__.pop("build", None)


def own_logs(strategy: tf.distribute.Strategy, step, x, y, w) -> StepLogs:
    """The logs a model's own `step` (train_step, test_step) returns on (x, y, w), as Keras's
    fit hands it data; found by tracing it, not running it."""
    data = _batch(x, y, w)
    return StepLogs.traced(strategy, lambda: step(data))
