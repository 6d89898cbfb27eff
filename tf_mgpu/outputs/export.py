"""The trained model as files that outlive training: `model.keras` and a SavedModel.

  model.keras    the task's model, compiled as build_model() compiled it, with
                 the trained weights: `keras.saving.load_model` reads it back
                 (custom layers need their module importable, as in Keras).
  saved_model/   `model.export`'s SavedModel, for TF Serving: `serve` takes
                 what the model takes.

Both are float32 copies built outside any strategy, whatever dtype training
used, so neither building nor saving involves a collective. Each is written
under another name and renamed into place: a killed run never leaves half an
export. A task may export otherwise (`export(model, model_dir)`, as the
built-in MNIST tasks do).
"""

import inspect
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.errors import UserError

KERAS = "model.keras"
SAVED_MODEL = "saved_model"


def save(model: keras.Model, model_dir: str, say=print) -> list[str]:
    """Writes a float32 copy of `model` into `model_dir`; returns the paths written.

    Call it outside any strategy scope, on the chief only. Raises OSError if
    the disk refuses. A subclassed model that cannot be rebuilt from its
    config (`get_config`) gets a SavedModel of the trained model only, and
    `say` tells the user in one line (its weights are in model.weights.h5).
    """
    saved_model = os.path.join(model_dir, SAVED_MODEL)
    try:
        exported = float32_copy(model)
    except NotRebuildable as e:
        say(
            f"tf_mgpu export: {type(model).__name__} cannot be rebuilt from its config ({e}); "
            f"wrote {SAVED_MODEL}/ and model.weights.h5 but no {KERAS}: {_advice(model)}"
        )
        write_dir(saved_model, lambda folder: model.export(folder, verbose=False))
        return [saved_model]
    write_keras(exported, model_dir)
    write_dir(saved_model, lambda folder: exported.export(folder, verbose=False))
    return [os.path.join(model_dir, KERAS), saved_model]


def _advice(model: keras.Model) -> str:
    """What to change in the task to get model.keras."""
    lambdas = _python_lambdas(model)
    if lambdas:
        # Keras saves a Python lambda as bytecode, which load_model refuses unless given
        # safe_mode=False (this export's clone is such a load), and which even then runs
        # without the names of the user's module (`ops`: a NameError). A function defined
        # with def is saved by name: load_model finds it once registered (or as a custom
        # object).
        layers = ", ".join(f"'{name}'" for name in lambdas)
        return (
            f"Lambda layer {layers} wraps a Python lambda, which Keras saves as bytecode that "
            f"load_model refuses (safe_mode); define the function with def (decorated with "
            f"@keras.saving.register_keras_serializable() for load_model to find it), or "
            f"replace the Lambda by a small keras.layers.Layer subclass, to get {KERAS}"
        )
    return f"give the class a get_config() returning its __init__ arguments to get {KERAS}"


def _python_lambdas(model: keras.Model) -> list[str]:
    """The names of the model's Lambda layers whose function is a Python lambda."""
    return [
        layer.name
        for layer in _layers(model)
        if isinstance(layer, keras.layers.Lambda)
        and getattr(layer.function, "__name__", None) == "<lambda>"
    ]


class NotRebuildable(Exception):  # noqa: N818 (an outcome the export handles)
    """A subclassed model whose class cannot be built again from its config."""


def float32_copy(model: keras.Model) -> keras.Model:
    """A copy of `model` with float32 layers, the trained weights and layer state (a lookup
    layer's vocabulary, an adapted Normalization's statistics), and the same compile.

    Its variables are new and outside any strategy, so saving it reads no
    mirrored or sync-on-read variable (reading those can be collective).
    Sequential and functional models are cloned layer by layer; a subclassed
    one is rebuilt from its config, as `keras.saving.load_model` would.
    """
    if tf.distribute.has_strategy():
        raise RuntimeError("export outside strategy.scope(): variables made inside are mirrored")

    def float32_layer(layer):
        config = layer.get_config()
        # An operation called on Keras tensors (`x + 3.0` in keras.applications' MobileNetV3)
        # is cloned too, and takes no dtype.
        if isinstance(layer, keras.layers.Layer):
            config = {**config, "dtype": "float32"}
        return type(layer).from_config(config)

    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")  # what a subclassed model's layers are made in
    try:
        try:
            with keras.saving.custom_object_scope(_own_objects(model)):
                copy = keras.models.clone_model(model, clone_function=float32_layer)
        except ValueError:  # a subclassed model: Keras clones only graphs of layers
            copy = _rebuilt(model)
    finally:
        keras.config.set_dtype_policy(policy)
    copy.set_weights(model.get_weights())
    _copy_state(model, copy)
    optimizer = model.optimizer
    plain, weighted = internals.compiled_metrics(model)
    copy.compile(
        optimizer=type(optimizer).from_config(optimizer.get_config()),
        loss=model.loss,
        loss_weights=internals.compiled_loss_weights(model),
        metrics=_fresh_metrics(plain),
        weighted_metrics=None if weighted is None else _fresh_metrics(weighted),
    )
    return copy


def _own_objects(model: keras.Model) -> dict:
    """The classes and functions of the user's own, not registered, that a clone of `model`
    finds only by the names Keras serializes them under: compile's metrics and losses
    (cloning a compiled model compiles the clone from its config) and the functions
    defined with def of its Lambda layers (a Lambda is rebuilt from its config)."""
    functions = [
        layer.function for layer in _layers(model) if isinstance(layer, keras.layers.Lambda)
    ]
    given = [
        model.loss,
        *internals.compiled_metrics(model),
        functions,
    ]
    found = {}
    for item in tf.nest.flatten(given):
        if item is None or isinstance(item, str):
            continue
        kind = item if inspect.isfunction(item) or inspect.isclass(item) else type(item)
        if not kind.__module__.startswith("keras."):
            found[keras.saving.get_registered_name(kind)] = kind
    return found


def _rebuilt(model: keras.Model) -> keras.Model:
    """A subclassed model built anew from its config and called once, as Keras's loading
    does; NotRebuildable if its class cannot do that."""
    try:
        config = {**model.get_config(), "dtype": "float32"}
        copy = type(model).from_config(config)
    except (NotImplementedError, TypeError, ValueError) as e:
        said = " ".join(str(e).split()).split(". ")[0]  # Keras's first sentence says why
        raise NotRebuildable(said or type(e).__name__) from None
    shapes = (model.get_build_config() or {}).get("input_shape")
    if shapes is None:
        raise NotRebuildable("it was never called, so its input shape is unknown")
    copy(_zeros(shapes))
    return copy


def _zeros(shapes):
    """One example of zeros per input, for input shapes as Keras records them."""
    if isinstance(shapes, dict):
        return {name: _zeros(shape) for name, shape in shapes.items()}
    if isinstance(shapes, (list, tuple)) and shapes and isinstance(shapes[0], (list, tuple)):
        return [_zeros(shape) for shape in shapes]
    return np.zeros((1, *shapes[1:]), "float32")


def _copy_state(source: keras.Layer, target: keras.Layer) -> None:
    """What `set_weights` does not carry, layer by layer, through each layer's own saving
    methods, as `model.save` and `load_model` carry it: state that is not a weight (a lookup
    layer's vocabulary), and what a layer derives from its variables as it loads them (an
    adapted Normalization's mean and variance tensors, which its `call` reads: without them
    the copy, and so the SavedModel, would not normalise)."""
    for one, other in zip(_layers(source), _layers(target), strict=True):
        # Only layers with such state define these (Keras's preprocessing layers).
        assets = hasattr(one, "save_assets")
        if not (assets or hasattr(one, "finalize_state")):
            continue
        store = {}
        one.save_own_variables(store)
        other.load_own_variables(store)
        if assets:
            with tempfile.TemporaryDirectory() as folder:
                one.save_assets(folder)
                other.load_assets(folder)


def _layers(model: keras.Layer) -> list[keras.Layer]:
    found = []
    for layer in getattr(model, "layers", []):
        found += [layer, *_layers(layer)]
    return found


def _fresh_metrics(metrics):
    """compile's metrics as given (a list, or per output a dict or list of lists), with a
    new object for each metric object: the compiled ones' variables belong to the strategy."""
    if metrics is None:
        return []

    def fresh(metric):
        if isinstance(metric, keras.metrics.Metric):
            return type(metric).from_config(metric.get_config())
        return metric

    return tf.nest.map_structure(fresh, metrics)


def write_keras(model: keras.Model, model_dir: str) -> str:
    """`model` saved as `model_dir/model.keras`, atomically; returns the path."""
    path = os.path.join(model_dir, KERAS)
    partial = os.path.join(model_dir, "partial." + KERAS)  # Keras insists on the suffix
    model.save(partial)
    os.replace(partial, path)
    return path


def remove(model_dir: str) -> None:
    """Deletes what an export writes into `model_dir`, leftovers of a killed one included."""
    for name in (KERAS, "partial." + KERAS):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            os.remove(path)
    for suffix in ("", ".partial", ".old"):
        shutil.rmtree(os.path.join(model_dir, SAVED_MODEL + suffix), ignore_errors=True)


def write_dir(path: str, write: Callable[[str], None]) -> None:
    """Runs `write(folder)` on a fresh folder, then renames that folder to `path`.

    A folder cannot be renamed onto a non-empty one, so an old `path` first
    steps aside as `path.old`: a run killed between the two renames leaves no
    `path`, and the complete old export beside it, never half of one.
    """
    partial, old = path + ".partial", path + ".old"
    for leftover in (partial, old):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        write(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a full disk gets its space back
        raise
    if os.path.exists(path):
        os.replace(path, old)
    os.replace(partial, path)
    shutil.rmtree(old, ignore_errors=True)


def locate(path: str) -> str:
    """The .keras model at `path`: the file itself, or a model dir's `model.keras`."""
    if os.path.isdir(path):
        path = os.path.join(path, KERAS)
    if not (os.path.isfile(path) and path.endswith(".keras")):
        raise UserError(
            f"--model={path} is not a .keras model; pass the --model_dir of a finished run "
            f"or its {KERAS}"
        )
    return path


def load(path: str, own: dict | None = None) -> keras.Model:
    """The compiled Keras model at `path`; load it in the strategy's scope to mirror it.
    `own`: the classes and functions of the user's own it may name (`own_objects`)."""
    try:
        return keras.saving.load_model(path, custom_objects=own, compile=True)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise UserError(f"--model={path} cannot be read as a Keras model ({e})") from None
    except TypeError as e:  # Keras's "Could not locate function 'my_loss'..."
        if "Could not locate" not in str(e):
            raise
        raise UserError(
            f"--model={path} names a class or function Keras cannot find "
            f"({str(e).split('. ')[0]}); pass the --task that trained it, which defines it, "
            f"or decorate it with @keras.saving.register_keras_serializable()"
        ) from None


def own_objects(model: keras.Model) -> dict:
    """What `load` needs to read the export of a model built as `model` is (see
    `_own_objects`)."""
    return _own_objects(model)
