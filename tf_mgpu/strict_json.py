"""JSON as every file tf_mgpu writes it: strict (RFC 8259), so any parser reads it back.

Python's `json` writes NaN and Infinity, which are not JSON; here a non-finite
number becomes null (a metric with no defined value, say), and anything else
that JSON cannot hold raises instead of writing a file no one can read.
"""

import json
import math


def finite(value):
    """`value` with every non-finite float, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value, **kwargs) -> str:
    """`json.dumps` of `value` with non-finite numbers as null; never writes NaN or Infinity."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)
