"""The trained model as files that outlive training: `model.keras` and a SavedModel.

  model.keras    the trained model as Keras's own `model.save` writes it: every
                 layer's config and dtype, its state (a lookup layer's vocabulary,
                 an adapted Normalization's statistics), the compile and the
                 optimizer's state, so `keras.saving.load_model` then `fit`
                 continues the run (custom layers need their module importable,
                 as in Keras).
  saved_model/   `model.export`'s SavedModel, for TF Serving: `serve` takes
                 what the model takes.

Both are written from the trained model itself, outside any strategy (its mirrored
variables are read where they live, with no collective), except where training ran
under a mixed or float64 policy: then from a float32 copy built from the model's own
config, its float layers in float32 and every other dtype kept (an integer
`Hashing`, a string lookup), its weights and optimizer state copied. Each is written
under another name and renamed into place: a killed run never leaves half an export.
A task may export otherwise (`export(model, model_dir)`, as the built-in MNIST tasks do).
"""

import functools
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
from tf_mgpu.engine.model.layers import every_layer
from tf_mgpu.errors import UserError

KERAS = "model.keras"
SAVED_MODEL = "saved_model"

# Policies whose copy is float32: what a run's --dtype (or a task's policy) trains in.
_FLOAT_POLICIES = ("mixed_float16", "mixed_bfloat16", "float64", "float16", "bfloat16")


def save(model: keras.Model, model_dir: str, say=print) -> list[str]:
    """Writes `model` into `model_dir` (see the module's docstring); returns the paths.

    Call it outside any strategy scope, on the chief only. Raises OSError if the disk
    refuses. A model Keras could not load back (a subclassed model with no
    `get_config`, a Lambda of a Python lambda) gets a SavedModel only, and `say` tells
    the user in one line (its weights are in model.weights.h5).
    """
    if tf.distribute.has_strategy():
        raise RuntimeError("export outside strategy.scope(): the model's variables are mirrored")
    saved_model = os.path.join(model_dir, SAVED_MODEL)
    why = _not_loadable(model)
    if why:
        say(
            f"tf_mgpu export: {type(model).__name__} cannot be rebuilt from its config ({why}); "
            f"wrote {SAVED_MODEL}/ and model.weights.h5 but no {KERAS}: {_advice(model)}"
        )
        write_dir(saved_model, lambda folder: write_saved_model(model, folder))
        return [saved_model]
    exported = float32_copy(model) if _trained_in_float_policy(model) else model
    write_keras(exported, model_dir)
    if type(model).call is keras.Model.call:  # no forward pass to serve (a GAN trainer)
        say(
            f"tf_mgpu export: {type(model).__name__} has no call() to serve, so no "
            f"{SAVED_MODEL}/; {KERAS} holds it (its parts are its attributes)"
        )
        return [os.path.join(model_dir, KERAS)]
    try:
        write_dir(saved_model, lambda folder: write_saved_model(exported, folder))
    except ValueError as e:
        if "non-Tensor value None" in str(e):
            # keras.io's miniature GPT returns [logits, None]: a SavedModel serves tensors only.
            why = "call() returns None for an output, which a SavedModel cannot serve"
        elif "has never called" in str(e):
            # keras.io's VAE sets `self.built = True` itself: Keras recorded no input shapes.
            why = "input shapes are unknown to Keras (it was built without build())"
        else:
            raise
        name = type(model).__name__
        say(f"tf_mgpu export: {name}'s {why}, so no {SAVED_MODEL}/; {KERAS} holds it")
        return [os.path.join(model_dir, KERAS)]
    return [os.path.join(model_dir, KERAS), saved_model]


def write_saved_model(model: keras.Model, folder: str) -> None:
    """What `model.export(folder)` writes (an endpoint `serve` taking what the model takes),
    each variable stored once.

    Keras's own export tracks the model's Keras variables and, apart, the tf.Variables its
    endpoint reads, and TensorFlow stores both: every weight twice, on disk and in memory
    wherever it is loaded (keras-team/keras#23553, open). Here only the layers that hold
    other resources (a lookup layer's table) are tracked; the endpoint's variables are
    tracked as it reads them, once. A model whose endpoint reads a resource no layer
    tracks gets Keras's own export."""
    archive = keras.export.ExportArchive()
    for layer in every_layer(model):
        # Keras's lookup layers: their tables (a TextVectorization's inner StringLookup,
        # never built itself, is tracked with its holder)
        if hasattr(layer, "save_assets") and layer.built:
            archive.track(layer)
    try:
        archive.add_endpoint(
            "serve",
            functools.partial(model.__call__, training=False),
            internals.input_signature(model),
        )
        archive.write_out(folder, verbose=False)
    except (AssertionError, ValueError) as e:
        if "untracked" not in str(e):
            raise
        shutil.rmtree(folder, ignore_errors=True)
        model.export(folder, verbose=False)


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
        for layer in every_layer(model)
        if isinstance(layer, keras.layers.Lambda)
        and getattr(layer.function, "__name__", None) == "<lambda>"
    ]


def _not_loadable(model: keras.Model) -> str | None:
    """Why `keras.saving.load_model` could not read the model back, in Keras's words, or
    None: a Lambda of a Python lambda (refused by safe_mode), or a subclassed model whose
    class cannot be made from its config."""
    if _python_lambdas(model):
        return (
            "Requested the deserialization of a `Lambda` layer whose `function` is a Python lambda"
        )
    if _is_graph(model):
        return None
    try:
        # As Keras's save and load do: the config serialized first (layers given to the
        # class's __init__, as keras.io's patch_convnet gives them, become configs).
        with keras.saving.custom_object_scope(_own_objects(model)):
            keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    except (NotImplementedError, TypeError, ValueError) as e:
        said = " ".join(str(e).split()).split(". ")[0]  # Keras's first sentence says why
        return said or type(e).__name__
    return None


def _is_graph(model: keras.Model) -> bool:
    """A Sequential or functional model: Keras rebuilds it from its layers' configs."""
    return isinstance(model, keras.Sequential) or type(model).__name__ == "Functional"


def _trained_in_float_policy(model: keras.Model) -> bool:
    """Whether any layer computes or keeps its variables in another float than float32."""
    return any(layer.dtype_policy.name in _FLOAT_POLICIES for layer in [model, *every_layer(model)])


def float32_copy(model: keras.Model) -> keras.Model:
    """A copy of `model` built from its own config, its float layers in float32 and every
    other dtype kept, with the trained weights, each layer's state and the optimizer's
    state, outside any strategy (its variables are new: saving it reads nothing mirrored).
    """
    config = _float32_config(keras.saving.serialize_keras_object(model))
    # Compiled below with the model's own loss and metrics (a loss defined inside build_model,
    # a closure, has no name Keras's config could find it by), unless the class compiles
    # its own way (a GAN's compile(d_optimizer, g_optimizer, ...)): then from its config.
    own_compile = type(model).compile is not keras.Model.compile
    if not own_compile:
        config.pop("compile_config", None)
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        with keras.saving.custom_object_scope(_own_objects(model)):
            copy = keras.saving.deserialize_keras_object(config)
    finally:
        keras.config.set_dtype_policy(policy)
    if not copy.built:
        shapes = (model.get_build_config() or {}).get("input_shape")
        copy(_zeros(shapes))
    for source, target in zip(model.weights, copy.weights, strict=True):
        target.assign(np.asarray(source.numpy()).astype(target.dtype))
    _copy_state(model, copy)
    if getattr(model, "compiled", False) and not own_compile:
        plain, weighted = internals.compiled_metrics(model)
        optimizer = model.optimizer
        copy.compile(
            optimizer=type(optimizer).from_config(optimizer.get_config()),
            loss=model.loss,
            loss_weights=internals.compiled_loss_weights(model),
            # The metric objects themselves: the copy is saved, never evaluated, and saving
            # writes their configs (a function of the task's own, made anew, would not be
            # found by name).
            metrics=plain,
            weighted_metrics=weighted,
        )
    if getattr(copy, "optimizer", None) is not None and model.optimizer is not None:
        copy.optimizer.build(copy.trainable_variables)
        # By path: a LossScaleOptimizer holds its inner optimizer's variables and its own.
        trained = {v.path: v for v in model.optimizer.variables}
        for target in copy.optimizer.variables:
            source = trained.get(target.path)
            if source is not None and tuple(source.shape) == tuple(target.shape):
                target.assign(np.asarray(source.numpy()).astype(target.dtype))
    return copy


def _float32_config(config):
    """A serialized model's config with every float dtype policy and float input dtype
    (other than float32) made float32; integer, string and bool dtypes kept."""
    if isinstance(config, dict):
        if config.get("class_name") in ("DTypePolicy", "FloatDTypePolicy") and isinstance(
            config.get("config"), dict
        ):
            name = config["config"].get("name")
            if name in _FLOAT_POLICIES:
                return {**config, "config": {**config["config"], "name": "float32"}}
        found = {key: _float32_config(value) for key, value in config.items()}
        for key in ("dtype", "compute_dtype"):
            if found.get(key) in _FLOAT_POLICIES:
                found[key] = "float32"
        return found
    if isinstance(config, list):
        return [_float32_config(item) for item in config]
    return config


def _own_objects(model: keras.Model) -> dict:
    """The classes and functions of the user's own, not registered, that a clone of `model`
    finds only by the names Keras serializes them under: compile's metrics and losses
    (cloning a compiled model compiles the clone from its config) and the functions
    defined with def of its Lambda layers (a Lambda is rebuilt from its config)."""
    functions = [
        layer.function for layer in every_layer(model) if isinstance(layer, keras.layers.Lambda)
    ]
    given = [
        model.loss,
        *internals.compiled_metrics(model),
        functions,
        type(model),
        [type(layer) for layer in every_layer(model)],
    ]
    found = {}
    for item in tf.nest.flatten(given):
        if item is None or isinstance(item, str):
            continue
        kind = item if inspect.isfunction(item) or inspect.isclass(item) else type(item)
        if not kind.__module__.startswith("keras."):
            found[keras.saving.get_registered_name(kind)] = kind
    return found


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
    for one, other in zip(every_layer(source), every_layer(target), strict=True):
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
