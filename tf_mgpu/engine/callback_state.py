"""A Keras callback's state as strict JSON, so a checkpoint holds it and a resumed run
continues it: EarlyStopping's wait and best weights, ReduceLROnPlateau's cooldown, a
user's own counters."""

import base64
import importlib
import io

import keras
import numpy as np
import tensorflow as tf

# What a callback holds that is not its state: set again by the runner, never restored.
_NOT_STATE = ("_model", "model", "params", "_params")


def state_of(callback) -> dict:
    """The attributes of `callback` that can be written and read back exactly: numbers,
    strings, arrays (EarlyStopping's best weights), lists and dicts of them, and
    functions importable by name (a monitor's comparison)."""
    state = {}
    for name, value in vars(callback).items():
        if name in _NOT_STATE:
            continue
        encoded = _encode(value)
        if encoded is not _SKIP:
            state[name] = encoded
    return state


def restore(callback, state: dict) -> None:
    for name, encoded in state.items():
        setattr(callback, name, _decode(encoded))


_SKIP = object()


def _encode(value):
    if isinstance(value, np.generic):  # before float: np.float64 is one
        return {"numpy": value.item(), "dtype": str(value.dtype)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, tf.Tensor)) or keras.ops.is_tensor(value):
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(value), allow_pickle=False)
        return {"array": base64.b64encode(buffer.getvalue()).decode()}
    if isinstance(value, (list, tuple)):
        items = [_encode(v) for v in value]
        if any(i is _SKIP for i in items):
            return _SKIP
        return {"list": items, "tuple": isinstance(value, tuple)}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = {k: _encode(v) for k, v in value.items()}
        if any(i is _SKIP for i in items.values()):
            return _SKIP
        return {"dict": items}
    if callable(value) and _by_name(value) is not None:
        return {"function": _by_name(value)}
    return _SKIP


def _decode(encoded):
    if not isinstance(encoded, dict):
        return encoded
    if "numpy" in encoded:
        return np.dtype(encoded["dtype"]).type(encoded["numpy"])
    if "array" in encoded:
        return np.load(io.BytesIO(base64.b64decode(encoded["array"])), allow_pickle=False)
    if "list" in encoded:
        items = [_decode(v) for v in encoded["list"]]
        return tuple(items) if encoded["tuple"] else items
    if "dict" in encoded:
        return {k: _decode(v) for k, v in encoded["dict"].items()}
    module, _, name = encoded["function"].partition(":")
    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _by_name(function) -> str | None:
    """'module:qualname' when importing it gives `function` back, else None."""
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or "<" in name:
        return None
    try:
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{name}" if found is function else None
