"""Turns a user's task module into the engine's task record, once.

Errors in what the user handed us (no such file, a file that does not
import, a missing function, data of the wrong form) are one line each
(`UserError`). An exception raised inside the user's own code keeps its
traceback: it is their bug, and the traceback is what they need.
"""

import importlib
import importlib.util
import inspect
import os
import sys
import types

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import tasks
from tf_mgpu.config import Config
from tf_mgpu.engine.input import data, source, stream
from tf_mgpu.engine.input.checks import check_data
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError


def load(task) -> Task:
    """The task record for `task`: a --task string, a module, or an object with the functions."""
    if isinstance(task, str):
        tasks.check(task)
        # What the file sets at import is its policy (`Task.dtype`), not what an earlier
        # run left; the run applies it, and loading leaves the process's policy as it was.
        before = keras.config.dtype_policy()
        keras.config.set_dtype_policy("float32")
        try:
            return adapt(_import(task), name=task, where=f"--task={task}")
        finally:
            keras.config.set_dtype_policy(before)
    name = getattr(task, "__name__", type(task).__name__)
    return adapt(task, name=name, where=f"task {name}")


def _import(spec: str):
    module_name, _, attribute = spec.partition(":")
    try:
        if spec in tasks.BUILTIN:
            return importlib.import_module(tasks.BUILTIN[spec])
        if tasks.is_file(spec):
            return _import_file(spec)
        module = importlib.import_module(module_name)
    except (SyntaxError, ImportError) as e:
        raise UserError(f"--task={spec} does not import: {_where_it_failed(e)}") from None
    if not attribute:
        return module
    if not hasattr(module, attribute):
        raise UserError(f"--task={spec}: module {module_name} has no attribute {attribute!r}")
    return getattr(module, attribute)


def _import_file(path: str) -> types.ModuleType:
    """Imports the file at `path` under a name of its own, kept in sys.modules (Keras
    finds the file's functions again by module name when it saves the model)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"tf_mgpu_task_{stem}" if stem.isidentifier() else "tf_mgpu_task"
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _where_it_failed(error: Exception) -> str:
    """The error's own message, and the file and line where it happened."""
    if isinstance(error, SyntaxError):
        return f"{error.msg} ({error.filename}, line {error.lineno})"
    frames = [f for f in inspect.trace() if "importlib" not in f.filename]
    place = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    said = f"{type(error).__name__}: {error}{place}"
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.partition(".")[0]
        install = _EXTRAS.get(top, "the package that provides it")
        said += f"; install {install}"
    return said


# Packages the examples import that tf_mgpu's own install leaves out: the extra that adds them.
_EXTRAS = {
    "keras_hub": "KerasHub: pip install -e '.[hub]' -c constraints.txt",
    "torch": "PyTorch: pip install -e '.[bench]' -c constraints.txt",
}


def adapt(module, *, name: str, where: str) -> Task:
    """The record for a module (or object) that defines build_model and load_data."""
    for function in ("build_model", "load_data"):
        if not callable(getattr(module, function, None)):
            raise UserError(f"{where} defines no {function}(); {tasks.CONTRACT}")
    _refuse_ignored_names(module, where)
    load_data = module.load_data
    takes_config = bool(inspect.signature(load_data).parameters)

    class_weight = getattr(module, "CLASS_WEIGHT", None)

    def load(config: Config) -> data.Data:
        returned = load_data(config) if takes_config else load_data()
        # Held out before class weights, which weight training only (as Keras's fit).
        loaded = data.held_out(to_data(returned, where), config.validation_split, where)
        if class_weight is None:
            return loaded
        weighted = _class_weighted(loaded.train, class_weight, where)
        return data.Data(train=weighted, test=loaded.test, validation=loaded.validation)

    return Task(
        name=name,
        where=where,
        build_model=module.build_model,
        load_data=load,
        preprocess=_preprocess(module, where),
        reference_batch=getattr(module, "REFERENCE_BATCH", None),
        export=getattr(module, "export", None),
        dtype=keras.config.dtype_policy().name,
        callbacks=getattr(module, "callbacks", None),
        reads_config=takes_config,
    )


def _preprocess(module, where: str):
    """The task file's `preprocess(x)` hook, or the identity; one line where the file's
    `preprocess` cannot take one batch's inputs (a helper of its own by that name)."""
    found = getattr(module, "preprocess", None)
    if found is None:
        return data.identity
    try:
        signature = inspect.signature(found)
        signature.bind(None)
    except ValueError:  # no signature to read (a builtin): called as it is
        return found
    except TypeError:
        raise UserError(
            f"{where}: preprocess{signature} does not take one argument; tf_mgpu calls a task "
            f"file's preprocess(x) on each batch's inputs: rename your function if it is not "
            f"meant for that"
        ) from None
    return found


def refuse_unread_splits(task: Task, config: Config) -> None:
    """--train_split and --test_split, given on the command line, choose TFDS splits of the
    built-in MNIST tasks; a task whose load_data() takes no config cannot read them, so they
    are refused, not ignored."""
    if task.reads_config:
        return
    for flag, default in (("train_split", "train"), ("test_split", "test")):
        if getattr(config, flag) != default:
            raise UserError(
                f"--{flag}={getattr(config, flag)} chooses a TFDS split of the built-in MNIST "
                f"tasks; {task.where} loads its own data (its load_data() takes no config): "
                f"drop --{flag}, or define load_data(config) and read config.{flag} there"
            )


# Names a Keras user may define at module level expecting fit's behaviour, which the task
# contract does not read: each is refused rather than silently ignored.
_IGNORED = {
    "CALLBACKS": "define a function callbacks() that returns the list",
    "class_weight": "name the dict CLASS_WEIGHT, the task contract's name for it",
    "validation_data": "a validation split comes from load_data() returning (train, "
    "validation, test), or from --validation_split",
    "epochs": "the number of epochs comes from --epochs (tf_mgpu.train(epochs=...))",
}


def _refuse_ignored_names(module, where: str) -> None:
    given = getattr(module, "callbacks", None)
    if given is not None and not callable(given):
        raise UserError(
            f"{where} defines 'callbacks' as {type(given).__name__}; define a function "
            f"callbacks() that returns the list, so each run gets fresh callbacks "
            f"({tasks.CONTRACT})"
        )
    for name, why in _IGNORED.items():
        if hasattr(module, name):
            raise UserError(
                f"{where} defines {name!r}, which tf_mgpu would ignore: {why}; remove it "
                f"({tasks.CONTRACT})"
            )


def to_data(returned, where: str) -> data.Data:
    """load_data's result as two splits (arrays in memory, or a tf.data.Dataset streamed);
    UserError if it has another form."""
    try:
        train, *validation, test = returned
        if len(validation) > 1:
            raise ValueError
    except (TypeError, ValueError):
        raise UserError(
            f"{where}: load_data() returned {type(returned).__name__}; it must return "
            f"(x_train, y_train), (x_test, y_test), or three splits: train, validation, test"
        ) from None
    loaded = data.Data(
        train=_split(train, where, "train"),
        test=_split(test, where, "test"),
        validation=_split(validation[0], where, "validation") if validation else None,
    )
    check_data(loaded, where)
    return loaded


def _split(pair, where: str, name: str) -> data.Split | stream.Stream | source.Source:
    if isinstance(pair, tf.data.Dataset):
        return stream.scan(pair, where, name)  # streamed, never held in memory
    if source.is_source(pair):
        return source.open_source(pair, where, name)  # read by index; example 0 checked
    try:
        x, y, *weights = pair
        if len(weights) > 1:
            raise ValueError
    except (TypeError, ValueError):
        raise UserError(
            f"{where}: load_data()'s {name} split is {type(pair).__name__}; give "
            f"(x_{name}, y_{name}) or (x_{name}, y_{name}, sample_weight_{name}) arrays, or "
            f"a tf.data.Dataset of (x, y) elements, or an object read by index (__len__ "
            f"and __getitem__(i) returning (x, y))"
        ) from None
    x = _inputs(x)
    y = _labels(y)
    labels = [(data.in_split(key, name), array) for key, array in data.labelled(y)]
    for key, array in labels:
        if array.ndim == 0:
            raise UserError(f"{where}: {key} is a single value; give one label per example")
    named = [(data.in_split(key, name), array) for key, array in data.features(x)]
    first, rows = (labels or named)[0][0], len((labels or named)[0][1])
    w = _sample_weights(weights[0], rows, where, name) if weights else None
    for key, array in [*named, *labels]:
        if array.ndim == 0 or len(array) != rows:
            shown = len(array) if array.ndim else "no"
            raise UserError(
                f"{where}: {key} has {shown} rows but {first} has {rows}; "
                f"give x and y one row per example"
            )
    if rows == 0:
        raise UserError(f"{where}: the {name} split is empty; load_data() must return examples")
    return data.Split(x, y, w)


def _inputs(x):
    """load_data's x as arrays: one, a dict keyed by the inputs' names, or for a model with
    several inputs a tuple in their order (a list of arrays, as `fit(x=[a, b])` takes it)."""
    if isinstance(x, dict):
        return {key: np.asarray(array) for key, array in x.items()}
    if isinstance(x, (list, tuple)) and len(x) > 1 and all(_is_array(a) for a in x):
        return tuple(np.asarray(array) for array in x)
    return np.asarray(x)


def _labels(y):
    """load_data's y as arrays: one, or for a model with several outputs a dict of them
    (keyed by the outputs' names) or a tuple (in their order), as Keras takes them; `()`
    for None (a model trained without labels, as `fit(x)` trains it)."""
    if y is None:
        return ()
    if isinstance(y, dict) and y:
        return {key: np.asarray(array) for key, array in y.items()}
    if isinstance(y, (list, tuple)) and y and all(_is_array(labels) for labels in y):
        return tuple(np.asarray(array) for array in y)
    return np.asarray(y)  # a list of numbers is one array of labels, as before


def _is_array(value) -> bool:
    return hasattr(value, "shape") and np.ndim(value) >= 1


def _sample_weights(given, rows: int, where: str, name: str) -> np.ndarray:
    """The split's sample weights as a float array of non-negative values: one per example,
    or one per position of a loss of several values per example (a weight per token, shape
    (rows, tokens)), as Keras's `fit(sample_weight=...)` takes them: booleans as 0 and 1
    (KerasHub's preprocessors give a token's weight so)."""
    w = np.asarray(given)
    if w.dtype == bool:
        w = w.astype(np.float32)
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.ndim == 0 or w.shape[0] != rows or not np.issubdtype(w.dtype, np.number):
        raise UserError(
            f"{where}: sample_weight_{name} has shape {w.shape} ({w.dtype}); give one number "
            f"per example, shape ({rows},), or one per position of the loss, shape "
            f"({rows}, ...)"
        )
    w = w.astype(np.float32 if w.dtype != np.float64 else np.float64)
    if np.isfinite(w).all() and (w < 0).any():
        raise UserError(
            f"{where}: sample_weight_{name} holds negative weights; weights must be >= 0"
        )
    return w


def _class_weighted(split, class_weight: dict, where: str) -> data.Split:
    """The training split with each example's weight times its class's, as Keras's
    `fit(class_weight=...)`: sparse labels, one-hot labels (argmax) or 0/1 labels."""
    if isinstance(split, (stream.Stream, source.Source)):
        raise UserError(
            f"{where}: CLASS_WEIGHT applies to arrays, not yet to a tf.data.Dataset or a "
            f"source read by index; put the class weights in each example's sample_weight"
        )
    y = split.y
    if not isinstance(y, np.ndarray):
        raise UserError(
            f"{where}: CLASS_WEIGHT applies to a model with one output, as Keras's "
            f"fit(class_weight=...); give per-example weights as sample_weight arrays instead"
        )
    classes = y.argmax(-1) if y.ndim == 2 and y.shape[1] > 1 else y.reshape(len(y))
    classes = np.rint(classes).astype(np.int64)
    missing = sorted(set(np.unique(classes).tolist()) - set(class_weight))
    if missing:
        raise UserError(
            f"{where}: CLASS_WEIGHT has no weight for class {missing[0]} (it names "
            f"{sorted(class_weight)}); give every class of y_train a weight"
        )
    table = np.zeros(classes.max() + 1, np.float64)
    for label, weight in class_weight.items():
        if 0 <= label < len(table):
            table[label] = weight
    weights = table[classes]
    if split.w is not None:  # one weight per example, or per position (rank 2 or more)
        weights = weights.reshape(-1, *[1] * (split.w.ndim - 1)) * split.w
    return data.Split(split.x, split.y, weights.astype(np.float32))
