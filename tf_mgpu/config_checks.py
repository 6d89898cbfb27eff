"""What a setting's declaration allows (`tf_mgpu.config.setting`): its type, choices, bounds,
and the parsers of the settings given as text that is not a plain type.

`Config` checks every field with `checked` whenever one is made, from flags or from
`tf_mgpu.train(**settings)`; `tf_mgpu.cli.define_settings` runs the same `normalized` on
each flag as absl parses it, so a bad flag is named as the flag. The bounds live in the
declarations only. Nothing here imports TensorFlow.
"""

import dataclasses
import math
import numbers
import os
import types

from tf_mgpu.errors import SettingError


def kinds(field: dataclasses.Field) -> set[type]:
    """The types `field` takes, None aside."""
    found = set(field.type.__args__) if isinstance(field.type, types.UnionType) else {field.type}
    found.discard(type(None))
    return found


def optional(field: dataclasses.Field) -> bool:
    return isinstance(field.type, types.UnionType) and type(None) in field.type.__args__


def describe(field: dataclasses.Field) -> str:
    """What `field` takes, as in 'must be ...': 'an integer of at least 1'."""
    meta = field.metadata
    if meta.get("takes"):
        return meta["takes"]
    if meta["choices"]:
        return f"one of {', '.join(meta['choices'])}"
    kind = kinds(field)
    if kind == {bool}:
        return "True or False"
    if kind == {int}:
        return "an integer" + _bounds(meta)
    if kind == {float}:
        return ("a positive" if meta.get("positive") else "a") + " finite number" + _bounds(meta)
    return "a string"


def _bounds(meta) -> str:
    lower, upper = meta["lower"], meta["upper"]
    if lower is not None and upper is not None:
        return f" from {lower:g} to {upper:g}"
    if lower is not None:
        return f" of at least {lower:g}"
    if upper is not None:
        return f" of at most {upper:g}"
    return ""


def parse_steps_per_loop(value) -> int | str:
    """--steps_per_loop's value: "auto" or a positive int; ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise ValueError(f"{value!r} is neither auto nor a positive number of steps")


def parse_jit_compile(value) -> bool | str:
    """--jit_compile's value: True, False or "auto"; ValueError for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text in ("true", "t", "1", "yes"):
        return True
    if text in ("false", "f", "0", "no"):
        return False
    raise ValueError(f"{value!r} is not one of auto, true, false")


def checked(field: dataclasses.Field, value):
    """`value` as `field` holds it (see `normalized`); SettingError naming the setting."""
    try:
        return normalized(field, value)
    except ValueError as e:
        raise SettingError(f"{field.name}={value!r}: {e}") from None


def normalized(field: dataclasses.Field, value):
    """`value` as `field` holds it: a number as the field's type, a path as str, text parsed
    by the field's parser; ValueError saying what the field takes otherwise."""
    if value is None:
        if optional(field):
            return None
        raise ValueError(f"must be {describe(field)}, not None")
    meta, kind = field.metadata, kinds(field)
    if meta.get("parse"):
        try:
            return meta["parse"](value)
        except ValueError:
            raise ValueError(f"must be {describe(field)}") from None
    if kind == {bool}:
        result = _of_type(field, value, bool, bool)
    elif kind == {int}:
        result = _of_type(field, value, numbers.Integral, int)
    elif kind == {float}:
        result = _of_type(field, value, numbers.Real, float)
        if not math.isfinite(result) or (meta.get("positive") and result <= 0):
            raise ValueError(f"must be {describe(field)}")
    else:
        result = _of_type(field, value, (str, os.PathLike), os.fspath)
    if meta["choices"] and result not in (*meta["choices"], *meta.get("also", ())):
        raise ValueError(f"must be {describe(field)}")
    too_low = meta["lower"] is not None and result < meta["lower"]
    if too_low or (meta["upper"] is not None and result > meta["upper"]):
        raise ValueError(f"must be {describe(field)}")
    return result


def _of_type(field, value, accepted, convert):
    # A bool is an int to Python, but True epochs is a mistake, not 1.
    if isinstance(value, accepted) and (convert is bool or not isinstance(value, bool)):
        result = convert(value)
        if isinstance(result, str | bool | int | float):
            return result
    raise ValueError(f"must be {describe(field)}, not {type(value).__name__}")
