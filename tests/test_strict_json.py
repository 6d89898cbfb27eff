"""Every JSON file tf_mgpu writes is strict JSON: non-finite numbers as null, never NaN."""

import ast
import json
import math

import pytest

from tests.support import ROOT
from tf_mgpu import strict_json


def refuse(constant):
    raise AssertionError(f"{constant} is not JSON")


def test_non_finite_numbers_become_null_at_any_depth():
    value = {"a": math.nan, "b": [1.5, math.inf, {"c": -math.inf}], "d": (2, "x")}
    text = strict_json.dumps(value)
    assert json.loads(text, parse_constant=refuse) == {
        "a": None,
        "b": [1.5, None, {"c": None}],
        "d": [2, "x"],
    }


def test_what_json_cannot_hold_raises_instead_of_writing():
    with pytest.raises(TypeError):
        strict_json.dumps({"model": object()})


def test_every_json_writer_in_the_package_goes_through_strict_json():
    """A writer that calls json.dump(s) itself could write NaN again: none may."""
    allowed = {"strict_json.py"}
    offenders = []
    for path in sorted((ROOT / "tf_mgpu").rglob("*.py")):
        if path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("dump", "dumps")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
                and not _is_tf_config(node)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], f"call strict_json.dumps instead of json.dump(s): {offenders}"


def _is_tf_config(node: ast.Call) -> bool:
    """TF_CONFIG is an environment variable, not a file, and holds no floats."""
    return any(isinstance(arg, ast.Name) and arg.id in ("spec", "tf_config") for arg in node.args)
