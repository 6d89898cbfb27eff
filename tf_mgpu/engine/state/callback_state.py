"""A Keras callback's state as strict JSON, so a checkpoint holds it and a resumed run
continues it: EarlyStopping's wait and best weights, ReduceLROnPlateau's cooldown, a
user's own counters."""

import base64
import inspect
import io

import keras
import numpy as np
import tensorflow as tf

# What a callback holds that is not its state: set again by the runner, never restored.
_NOT_STATE = ("_model", "model", "params", "_params")


def state_of(callback) -> dict:
    """The attributes of `callback` that change as it runs and can be written and read back
    exactly: numbers (inf and NaN too), strings, arrays (EarlyStopping's best weights), and
    lists and dicts of them. Not its constructor's arguments (`patience`, `factor`...):
    what this run's `callbacks()` says stands, even if edited since. Not functions either
    (EarlyStopping's `monitor_op`), which callbacks make again from those arguments; restoring
    `monitor_op` without the `min_delta` it negated would flip the sign."""
    given = set(inspect.signature(type(callback).__init__).parameters)
    state = {}
    for name, value in vars(callback).items():
        if name in _NOT_STATE or name in given or callable(value):
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
        return {"numpy": _number(value.item()), "dtype": str(value.dtype)}
    if isinstance(value, float) and not np.isfinite(value):
        return {"float": repr(value)}  # strict JSON has no inf or NaN
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
    return _SKIP


def _number(value):
    return repr(value) if isinstance(value, float) and not np.isfinite(value) else value


def _decode(encoded):
    if not isinstance(encoded, dict):
        return encoded
    if "numpy" in encoded:
        number = encoded["numpy"]
        return np.dtype(encoded["dtype"]).type(float(number) if isinstance(number, str) else number)
    if "float" in encoded:
        return float(encoded["float"])
    if "array" in encoded:
        return np.load(io.BytesIO(base64.b64decode(encoded["array"])), allow_pickle=False)
    if "list" in encoded:
        items = [_decode(v) for v in encoded["list"]]
        return tuple(items) if encoded["tuple"] else items
    if "dict" in encoded:
        return {k: _decode(v) for k, v in encoded["dict"].items()}
    raise ValueError(f"not a callback state: {encoded}")
