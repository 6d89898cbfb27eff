"""What `tests.zoo.one` does to an adapted example: load it, turn its dropout off, reload its
export, and train it with Keras's own `fit` as tf_mgpu trained it."""

import contextlib
import importlib.util
import pathlib
import sys
import types

import keras
import numpy as np
import tensorflow as tf

from tests.keras.helpers import keras_evaluate, keras_input, own_objects
from tf_mgpu.engine.input import data, stream, stream_batched, stream_shard
from tf_mgpu.engine.model import compiled
from tf_mgpu.engine.model.layers import every_layer
from tf_mgpu.tools.equivalence import randomness

# What a task file may define that tf_mgpu reads (tf_mgpu.tasks's contract).
_CONTRACT = ("load_data", "preprocess", "REFERENCE_BATCH", "export", "callbacks", "CLASS_WEIGHT")


def import_file(path: pathlib.Path) -> types.ModuleType:
    """The file imported under a name of its own, kept in sys.modules (Keras finds its
    functions by module name when it saves and loads the model)."""
    name = "zoo_" + path.parent.name + "_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def without_randomness(module) -> tuple[types.SimpleNamespace, list[str]]:
    """The task with its training-only randomness off (dropout, augmentation layers), as
    `check` runs it (`randomness.turn_off`), and what was turned off."""
    turned_off: list[str] = []

    def build_model():
        model = module.build_model()
        for name in randomness.turn_off(model):
            if name not in turned_off:
                turned_off.append(name)
        return model

    given = {name: getattr(module, name) for name in _CONTRACT if hasattr(module, name)}
    task = types.SimpleNamespace(__name__=module.__name__, build_model=build_model, **given)
    return task, turned_off


def random_ops(model: keras.Model, train) -> list[str]:
    """The random ops one training step of `model` (Keras's fit's, on one device) runs: a
    random augmentation layer, a SeedGenerator of the user's own, tf.random in a train_step.
    Dropout turned off runs none. Found by tracing the step, never run."""
    x, y, *w = _first_rows(train)
    data = keras.utils.pack_x_y_sample_weight(x, y, w[0] if w else None)
    graph = tf.function(lambda: model.train_step(data), autograph=False).get_concrete_function()
    return sorted(_random_ops(graph.graph, set()))


def _first_rows(train) -> tuple:
    if isinstance(train, tf.data.Dataset):
        _, batched = stream_batched.unbatched(train)
        element = next(iter(train if batched else train.batch(8)))
        return element if len(element) > 1 else (element[0], None)
    x, y, *w = train

    def first(a):  # tensors, floats in floatx, as Keras's fit hands them to the step
        a = np.asarray(a)[:8]
        if np.issubdtype(a.dtype, np.floating):
            a = a.astype(keras.config.floatx())
        return tf.constant(a)

    if y is None:  # trained without labels (an add_loss, a train_step of its own)
        cut = tf.nest.map_structure(first, (x, *w))
        return (cut[0], None, *cut[1:])
    return tf.nest.map_structure(first, (x, y, *w))


def _random_ops(graph, found: set) -> set:
    for op in graph.get_operations():
        if "Random" in op.type:
            found.add(op.type)
    for function in getattr(graph, "_functions", {}).values():
        if getattr(function, "graph", None) is not None:
            _random_ops(function.graph, found)
    return found


def reloaded_agrees(module, run, model_dir: str, strategy=None, divided: int = 1) -> str:
    """Checks that the export, reloaded by Keras (under `strategy`, if given), is the trained
    model: its `evaluate` gives the run's test figures, or (a model Keras cannot evaluate) it
    holds the trained weights. Returns what was checked; raises AssertionError otherwise.
    With `divided` N, a figure may also be Keras's divided by N: a loss that a test_step of
    the model's own computes with a Keras Loss, which Keras divides by N replicas (and
    reports so: its evaluate on N replicas takes the replicas' mean)."""
    summary = run.summary
    with strategy.scope() if strategy else contextlib.nullcontext():
        reloaded = keras.saving.load_model(
            pathlib.Path(model_dir) / "model.keras", custom_objects=own_objects(module)
        )
    test = module.load_data()[-1]
    figures = {k[len("test_") :]: v for k, v in summary.items() if k.startswith("test_")}
    if "loss" in figures:
        says = keras_evaluate(reloaded, test, summary["global_batch"])
        for key, value in says.items():
            if key in figures:
                options = (value, value / divided)
                assert any(np.isclose(figures[key], v, rtol=1e-4, atol=1e-5) for v in options), (
                    key,
                    figures,
                    says,
                )
        return "evaluate: " + ", ".join(f"{k} {v:.5g}" for k, v in sorted(says.items()))
    for a, b in zip(run.state.model.weights, reloaded.weights, strict=True):
        trained, loaded = np.asarray(a.numpy(), np.float64), np.asarray(b.numpy(), np.float64)
        np.testing.assert_allclose(loaded, trained, rtol=1e-6, atol=1e-7, err_msg=a.path)
    return "weights (no test figures to compare)"


def keras_fit(
    module, task, dtype: str, global_batch: int, strategy=None, splits=None
) -> tuple[list[np.ndarray], list]:
    """Keras's own fit of the task's model (built from the same seed in `dtype`, randomness
    off) for one epoch at `global_batch`, on tf_mgpu's examples in tf_mgpu's order: on one
    device, or under `strategy` (its BatchNormalization synchronized, as tf_mgpu's run).
    Returns (its weights, the random ops its step still runs)."""
    policy, floatx = keras.config.dtype_policy(), keras.config.floatx()
    # Layer names counted afresh, as in the example's own process: an example that finds a
    # layer by its name ("bert_backbone") finds it in this second build too.
    keras.utils.clear_session()
    keras.utils.set_random_seed(3)
    keras.config.set_dtype_policy(dtype)
    keras.config.set_floatx(dtype)
    try:
        if strategy is None:
            model = task.build_model()
        else:
            with strategy.scope():
                model = task.build_model()
            for layer in every_layer(model):
                if isinstance(layer, keras.layers.BatchNormalization):
                    layer.synchronized = True
        # The run's own splits where given: a load_data that adapts a layer (not repeatable)
        # gives other arrays in each import of the file.
        splits = module.load_data() if splits is None else splits
        given = _ordered(splits[0], global_batch)
        extra = {}
        if len(splits) == 3:  # a validation split, as the example's fit takes one
            extra["validation_data"] = _validation(splits[1], global_batch)
        if getattr(module, "CLASS_WEIGHT", None) is not None:
            extra["class_weight"] = module.CLASS_WEIGHT
        if callable(getattr(module, "callbacks", None)):
            extra["callbacks"] = module.callbacks()
        model.fit(**given, epochs=1, shuffle=False, verbose=0, **extra)
        if compiled.evaluable(model):  # as the run ends: a call() may assign (pixelcnn's mask)
            keras_evaluate(model, splits[-1], global_batch)
        weights = [np.asarray(w.numpy()) for w in model.weights]
        if strategy is not None:
            return weights, []
        return weights, random_ops(model, splits[0])
    finally:
        keras.config.set_dtype_policy(policy)
        keras.config.set_floatx(floatx)


def _validation(split, global_batch: int):
    if isinstance(split, tf.data.Dataset):
        _, batched = stream_batched.unbatched(split)
        return split if batched else split.batch(global_batch)
    return tuple(tf.nest.map_structure(keras_input, part) for part in split)


def _ordered(train, global_batch: int) -> dict:
    """fit's arguments for the training split in tf_mgpu's order (seed 3, epoch 0)."""
    if isinstance(train, tf.data.Dataset):
        split = stream.scan(train, "zoo", "train")
        steps = stream_shard.worker_steps(
            split, global_batch, 3, 0, tf.distribute.InputContext(1, 0, 1)
        )
        # One (x, y[, w]) batch per local replica (one here); tf.data unpacks the tuple.
        return {"x": steps.map(lambda *parts: parts[0])}
    x, y, *w = train
    examples = len(tf.nest.flatten(x)[0])
    used = data.steps_per_epoch(examples, global_batch) * global_batch
    order = data.epoch_order(examples, 3, 0).numpy()[:used]

    def pick(part):
        if part is None:
            return None
        if isinstance(part, (list, tuple)) and not hasattr(part, "shape"):
            return type(part)(keras_input(np.asarray(a)[order]) for a in part)
        return tf.nest.map_structure(lambda a: keras_input(np.asarray(a)[order]), part)

    given = {"x": pick(x), "y": pick(y), "batch_size": global_batch}
    if w:
        given["sample_weight"] = pick(w[0])
    return given
