"""Trains the user's model a few steps on one device and on N replicas, and compares.

Both sides start from the same initial weights (the seed), see the same
examples in the same order at the same global batch, run without XLA (N CPU
replicas cannot use it, and XLA rounds differently) and with the model's
randomness off (dropout's masks differ per replica by design). What is left
to differ is what the user's model does with the batch it is handed, which
is what this finds, layer by layer.
"""

import dataclasses
import time

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import devices
from tf_mgpu.engine.input import data
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError
from tf_mgpu.tools.equivalence import randomness


@dataclasses.dataclass(frozen=True)
class Side:
    """One side's run: its trainer, step time, test metrics and forward outputs."""

    replicas: int
    per_replica: int
    trainer: Trainer
    weights: list[tuple[str, list[np.ndarray]]]  # per layer, after the compared steps
    step_seconds: float  # a step of a second pass, traced and warm
    test: dict
    outputs: list[np.ndarray] | None  # each layer's output on the first global batch


def without_randomness(task: Task) -> tuple[Task, list[str]]:
    """`task` whose models have their training-only randomness turned off
    (`randomness.turn_off`), and what was (recorded once, though the model is built for each
    side)."""
    turned_off: list[str] = []
    builds = []

    def build_model():
        model = task.build_model()
        builds.append(model.name)
        found = randomness.turn_off(model)
        if len(builds) == 1:
            turned_off.extend(found)
        return model

    return dataclasses.replace(task, build_model=build_model), turned_off


def run_side(
    strategy: tf.distribute.Strategy, config: Config, task: Task, datasets: data.Data, steps: int
) -> Side:
    trainer = Trainer(strategy, config, task, datasets)
    outputs = _forward(strategy, trainer, datasets.train)
    trainer.train_epoch()
    weights = [
        (layer.name, [np.asarray(w.numpy(), np.float64) for w in layer.weights])
        for layer in trainer.state.model.layers
    ]
    test = trainer.evaluate()
    started = time.perf_counter()
    trainer.train_epoch()  # timed only: the compiled loop is warm now
    seconds = time.perf_counter() - started
    return Side(
        replicas=strategy.num_replicas_in_sync,
        per_replica=trainer.per_replica,
        trainer=trainer,
        weights=weights,
        step_seconds=seconds / steps,
        test=test,
        outputs=outputs,
    )


def _layer_outputs(model: keras.Model) -> keras.Model | None:
    """A model giving every layer's output, or None (a subclassed model has no graph)."""
    try:
        inputs = model.inputs
        layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
        return keras.Model(inputs, [layer.output for layer in layers])
    except (AttributeError, ValueError):
        return None


def layer_names(model: keras.Model) -> list[str]:
    return [layer.name for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]


def _forward(strategy, trainer: Trainer, split: data.Split) -> list[np.ndarray] | None:
    """Each layer's output, in training mode, on the first global batch as the replicas
    see it: each replica its own consecutive share. None for a subclassed model."""
    probe = _layer_outputs(trainer.state.model)
    if probe is None:
        return None
    batch = split.take(slice(0, trainer.global_batch))
    per_replica = trainer.per_replica
    preprocess = trainer.task.preprocess

    def share(context: tf.distribute.experimental.ValueContext):
        start = context.replica_id_in_sync_group * per_replica
        return tf.nest.map_structure(lambda a: tf.constant(a[start : start + per_replica]), batch.x)

    x = strategy.experimental_distribute_values_from_function(share)

    @tf.function
    def run(x):
        return strategy.run(lambda x: probe(preprocess(x), training=True), args=(x,))

    kept = [w.numpy() for w in trainer.state.model.non_trainable_weights]
    results = run(x)
    for weight, value in zip(trainer.state.model.non_trainable_weights, kept, strict=True):
        weight.assign(value)  # batch norm's moving statistics: as before the probe
    if not isinstance(results, (list, tuple)):
        results = [results]
    return [
        np.concatenate([np.asarray(t) for t in strategy.experimental_local_results(r)])
        for r in results
    ]


def retrace_differs(side: Side, split: data.Split) -> bool:
    """Two separately traced forward passes of one model on one batch disagree: the model
    draws random numbers outside Keras's seeded ops (NumPy or Python `random` in `call`)."""
    probe = _layer_outputs(side.trainer.state.model)
    model = side.trainer.state.model if probe is None else probe
    x = side.trainer.task.preprocess(split.take(slice(0, 8)).x)
    first = tf.function(lambda x: model(x, training=False))(x)
    second = tf.function(lambda x: model(x, training=False))(x)
    return any(
        not np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(tf.nest.flatten(first), tf.nest.flatten(second), strict=True)
    )


def compare(one: Side, many: Side, tolerance: float) -> tuple[list, str | None, bool]:
    """Per-layer weight differences, the first layer whose forward output differs, and
    whether the two sides agree within `tolerance` (relative to each layer's scale)."""
    rows = []
    for (name, ones), (_, manys) in zip(one.weights, many.weights, strict=True):
        # The layer's scale, not each weight's: a bias before BatchNormalization has no
        # gradient, holds rounding noise only, and would make noise look relative.
        sized = [(a, b) for a, b in zip(ones, manys, strict=True) if a.size]
        if sized:
            scale = max(max(float(np.abs(a).max()) for a, _ in sized), 1e-12)
            rows.append((name, max(float(np.abs(a - b).max()) for a, b in sized) / scale))
    model_one = one.trainer.state.model
    first = None
    if one.outputs is not None and many.outputs is not None:
        for name, a, b in zip(layer_names(model_one), one.outputs, many.outputs, strict=True):
            scale = max(float(np.abs(a).max()), 1e-12)
            if float(np.abs(a - b).max()) / scale > tolerance:
                first = name
                break
    equivalent = all(worst <= tolerance for _, worst in rows) and first is None
    return rows, first, equivalent


def strategies_for(replicas: int) -> tuple[tf.distribute.Strategy, tf.distribute.Strategy]:
    """One device, and N replicas over local GPUs or logical CPUs (split by the caller)."""
    names = devices.replica_devices()
    if len(names) < replicas:
        raise UserError(
            f"--replicas={replicas}: this machine has {len(names)} devices for replicas; "
            f"lower --replicas"
        )
    return tf.distribute.OneDeviceStrategy(names[0]), tf.distribute.MirroredStrategy(
        names[:replicas]
    )
