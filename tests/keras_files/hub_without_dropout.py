"""A KerasHub example of examples/ (the one $HUB_EXAMPLE names) with its dropout off, as `check`
turns dropout off: each replica draws its own masks by design, so only without them can 2
replicas or 2 workers be compared with one device. The example is otherwise as written."""

import importlib.util
import os
import pathlib

_NAME = os.environ["HUB_EXAMPLE"]
_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / f"{_NAME}.py"
_SPEC = importlib.util.spec_from_file_location(f"{_NAME}_without_dropout", _PATH)
example = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(example)
example.DROPOUT = 0.0

build_model, load_data = example.build_model, example.load_data
