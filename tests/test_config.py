"""The frozen run configuration, and the check every Config makes of itself."""

import dataclasses
import pathlib

import numpy as np
import pytest

from tf_mgpu import errors
from tf_mgpu.config import DTYPES, Config
from tf_mgpu.config_checks import parse_steps_per_loop
from tf_mgpu.errors import SettingError

FIELDS = {field.name: field for field in dataclasses.fields(Config)}


def test_defaults_are_the_seed_recipe():
    config = Config()
    # The rate is mnist_mlp's compiled one (SGD at 0.01) unless --learning_rate is given.
    assert (config.task, config.batch_size, config.epochs) == ("mnist_mlp", 64, 10)
    assert config.learning_rate is None


def test_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().epochs = 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"batch_size": 0}, "batch_size=0: must be an integer of at least 1"),
        ({"epochs": "two"}, "epochs='two': must be an integer of at least 1, not str"),
        ({"epochs": True}, "epochs=True: must be an integer of at least 1, not bool"),
        ({"epochs": 2.0}, "epochs=2.0: must be an integer of at least 1, not float"),
        ({"dtype": "float8"}, f"dtype='float8': must be one of {', '.join(DTYPES)}"),
        ({"strategy": "horovod"}, "strategy='horovod': must be one of mirrored,"),
        ({"steps_per_loop": "fast"}, "steps_per_loop='fast': must be auto or a positive integer"),
        ({"steps_per_loop": 0}, "steps_per_loop=0: must be auto or a positive integer"),
        ({"jit_compile": "maybe"}, "jit_compile='maybe': must be auto, true or false"),
        ({"learning_rate": 0}, "learning_rate=0: must be a positive finite number"),
        ({"learning_rate": float("nan")}, "learning_rate=nan: must be a positive finite number"),
        ({"startup_timeout": float("inf")}, "startup_timeout=inf: must be a finite number of"),
        ({"startup_timeout": "5"}, "startup_timeout='5': must be a finite number of at least 1"),
        ({"validation_split": 0.95}, "validation_split=0.95: must be a finite number from 0 to"),
        ({"seed": -1}, "seed=-1: must be an integer of at least 0"),
        ({"batch_workers": 0}, "batch_workers=0: must be an integer of at least 1"),
        ({"clean": 1}, "clean=1: must be True or False, not int"),
        ({"model_dir": b"/tmp"}, "model_dir=b'/tmp': must be a string, not bytes"),
        ({"task": None}, "task=None: must be a string, not None"),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else "",
)
def test_a_setting_outside_its_declaration_is_refused_naming_it(settings, message):
    with pytest.raises(SettingError) as raised:
        Config(**settings)
    assert str(raised.value).startswith(message), raised.value
    assert raised.value.exit_code == errors.EXIT_USAGE


def test_every_bound_and_choice_is_checked_at_its_edge():
    # Declared bounds are the only ones: each is refused just outside and taken on it.
    checked = 0
    for name, field in FIELDS.items():
        meta = field.metadata
        step = 1 if int in (field.type, *getattr(field.type, "__args__", ())) else 1e-6
        for edge, outside in ((meta["lower"], -step), (meta["upper"], step)):
            if edge is None:
                continue
            assert getattr(Config(**{name: edge}), name) == edge, name
            with pytest.raises(SettingError, match=rf"^{name}="):
                Config(**{name: edge + outside})
            checked += 1
        for choice in meta["choices"] or ():
            assert getattr(Config(**{name: choice}), name) == choice
    assert checked >= 15, "the declarations carry fewer bounds than this test expects"


def test_values_are_held_as_their_setting_types():
    config = Config(
        epochs=np.int64(3),
        learning_rate=1,
        steps_per_loop="8",
        jit_compile="false",
        model_dir=pathlib.Path("/tmp/run"),
    )
    assert (config.epochs, type(config.epochs)) == (3, int)
    assert (config.learning_rate, type(config.learning_rate)) == (1.0, float)
    assert (config.steps_per_loop, config.jit_compile) == (8, False)
    assert config.model_dir == "/tmp/run"


def test_replace_checks_again():
    with pytest.raises(SettingError, match=r"^epochs=0:"):
        dataclasses.replace(Config(), epochs=0)


@pytest.mark.parametrize(("text", "parsed"), [("auto", "auto"), ("AUTO", "auto"), ("7", 7), (3, 3)])
def test_steps_per_loop_values(text, parsed):
    assert parse_steps_per_loop(text) == parsed


@pytest.mark.parametrize("bad", ["0", "-1", "fast", "1.5", 0, True])
def test_bad_steps_per_loop_values(bad):
    with pytest.raises(ValueError, match="neither auto nor"):
        parse_steps_per_loop(bad)
