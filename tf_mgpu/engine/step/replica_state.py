"""Variables a model updates in its own step on each replica, kept the same on every replica.

A layer may update a variable of its own as it trains: BatchNormalization its moving
statistics, a user's layer a running mean or a count (`self.seen.assign_add(...)`). Keras
creates such a variable with aggregation "none", so under a distribution strategy each
replica updates its own copy from its own share of the batch and the copies drift apart
(Keras's fit on 2 replicas ends with 2 different moving means, and saves the first's).
Evaluation on each replica, a checkpoint and the export would each see another model.

The engine finds these variables before training, by tracing one step (never run) and
reading which model variables it assigns, and after every step sets each to the mean of
the replicas' values (`agree`): what a running statistic over the global batch is, and
the same on every replica and worker, so evaluation, checkpoints, a resume and the export
all hold one model. A count of examples then ends at 1/replicas of one device's: the run
says so before training (`describe`).
"""

import keras
import tensorflow as tf

from tf_mgpu.engine.model import unseeded
from tf_mgpu.engine.model.layers import every_layer

_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")


def written_per_replica(
    strategy: tf.distribute.Strategy, step, batch: tuple, candidates: list
) -> list:
    """Those of `candidates` (see `candidates`) that `step` (one replica's training step,
    called with `batch`) assigns on each replica, found by tracing `strategy.run(step)`
    once, never running it; [] on one replica. A candidate no step writes (a frozen
    embedding table) is left alone."""
    if strategy.num_replicas_in_sync == 1 or not candidates:
        return []
    handles = {}
    for variable in candidates:
        value = getattr(variable, "value", variable)
        parts = value.values if isinstance(value, tf.distribute.DistributedValues) else [value]
        for part in parts:
            handles[id(part.handle)] = variable

    @tf.function(autograph=False)
    def probe():
        return strategy.run(unseeded.carried(step), args=batch)

    found = _written(probe.get_concrete_function().graph, handles, {})
    return [variable for variable in candidates if id(variable) in found]


def candidates(model: keras.Model, skip: list) -> list:
    """The model's non-trainable float or integer weights (the optimizer keeps trainable
    ones the same everywhere), but those in `skip` (its random states, which the engine
    keeps by its own rule)."""
    skipped = {id(v) for v in skip}
    return [
        w
        for w in model.weights
        if not w.trainable
        and id(w) not in skipped
        and (tf.as_dtype(w.dtype).is_floating or tf.as_dtype(w.dtype).is_integer)
    ]


def _written(graph, handles: dict, found: dict) -> dict:
    """`found` plus every variable of `handles` an op of `graph` (or of a function it calls,
    a while loop's body say) assigns."""
    inner = {i.ref(): handles[id(o)] for o, i in graph.captures if id(o) in handles}
    for op in graph.get_operations():
        if op.type in _WRITES or op.type.startswith("ResourceScatter"):
            variable = inner.get(op.inputs[0].ref())
            if variable is not None:
                found[id(variable)] = variable
    for function in getattr(graph, "_functions", {}).values():
        nested = getattr(function, "graph", None)
        if nested is not None:
            _written(nested, handles, found)
    return found


def agree(variables: list) -> None:
    """On each replica, after its step: every variable of `variables` set to the mean of
    the replicas' values, as `first + mean(value - first)`, so a variable that is already
    the same everywhere stays exactly what it is. One all-gather for all of them."""
    context = tf.distribute.get_replica_context()
    if not variables or context is None or context.num_replicas_in_sync == 1:
        return
    flat = [tf.reshape(tf.cast(v, tf.float64), [-1]) for v in variables]
    every = context.all_gather(tf.concat(flat, 0)[None], axis=0)
    first = every[0]
    mean = first + tf.reduce_mean(every - first, axis=0)
    offset = 0
    for variable, part in zip(variables, flat, strict=True):
        size = int(part.shape[0])
        value = tf.reshape(mean[offset : offset + size], variable.shape)
        if not tf.as_dtype(variable.dtype).is_floating:
            value = tf.round(value)
        variable.assign(tf.cast(value, variable.dtype))
        offset += size


def named(model: keras.Model, variables: list) -> list[str]:
    """`layer's variable` for each of `variables` that is not BatchNormalization's (whose
    line is `replicas.warning`)."""
    owners = {id(w): layer for layer in every_layer(model) for w in layer.weights}
    return [
        f"{owners[id(v)].name if id(v) in owners else model.name}'s {v.name}"
        for v in variables
        if not isinstance(owners.get(id(v)), keras.layers.BatchNormalization)
    ]


def describe(model: keras.Model, variables: list, replicas: int, per_replica: int) -> str | None:
    """One line naming the variables `named` and what the engine makes of them."""
    shown = named(model, variables)
    if not shown:
        return None
    which = "it" if len(shown) == 1 else "each"
    return (
        f"tf_mgpu state: each replica updates {', '.join(shown)} in its step from its own "
        f"{per_replica} examples; after every step tf_mgpu sets {which} to the mean over the "
        f"{replicas} replicas, as a running statistic of the global batch would be (a count "
        f"of examples ends at 1/{replicas} of one device's)"
    )
