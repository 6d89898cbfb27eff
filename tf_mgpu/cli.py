"""What every command-line entry point shares: absl's parser with one-line errors,
quiet TensorFlow logs, and a prompt exit.

Each CLI (`main`, `evaluate`, `predict`, `launch`, `sweep`, `bench`) defines
its own flags; this module defines none, so importing it clashes with none.
"""

import dataclasses
import math
import os
import sys
import types
from collections.abc import Callable

from absl import flags, logging

from tf_mgpu import errors
from tf_mgpu.config import parse_jit_compile


def parse_flags(argv: list[str]) -> list[str]:
    """absl's parser, but a bad flag is one line and exit code 2 (absl's own uses 1)."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        print(f"tf_mgpu: error: {e}; see --helpfull", file=sys.stderr)
        sys.exit(errors.EXIT_USAGE)


class _AutoBooleanParser(flags.ArgumentParser):
    def parse(self, argument):
        return parse_jit_compile(argument)

    def flag_type(self) -> str:
        return "auto, true or false"


def define_auto_boolean(name: str, default: str, help_string: str):
    """A flag that takes auto, true or false; `--name` is true and `--noname` false."""
    flag = flags.Flag(
        _AutoBooleanParser(), flags.ArgumentSerializer(), name, default, help_string, boolean=True
    )
    return flags.DEFINE_flag(flag)


def define_settings(config_class, **formats) -> dict:
    """One flag per field of `config_class` (`tf_mgpu.config.setting`): its name, default,
    help (formatted with `formats`), choices and bounds; a float must also be finite.
    Returns the flag holders by name, in the fields' order."""
    holders = {}
    for field in dataclasses.fields(config_class):
        meta = field.metadata
        default = meta.get("command_default", field.default)
        help_text = meta["help"].format(**formats)
        bounds = {"lower_bound": meta["lower"], "upper_bound": meta["upper"]}
        kinds = (
            set(field.type.__args__) if isinstance(field.type, types.UnionType) else {field.type}
        )
        kinds.discard(type(None))
        if meta["choices"]:
            holder = flags.DEFINE_enum(field.name, default, meta["choices"], help_text)
        elif kinds == {bool}:
            holder = flags.DEFINE_boolean(field.name, default, help_text)
        elif kinds == {bool, str}:
            holder = define_auto_boolean(field.name, default, help_text)
        elif kinds == {int}:
            holder = flags.DEFINE_integer(field.name, default, help_text, **bounds)
        elif kinds == {float}:
            holder = flags.DEFINE_float(field.name, default, help_text, **bounds)
            positive = meta.get("positive", False)
            flags.register_validator(
                field.name,
                lambda value, positive=positive: (
                    value is None or (math.isfinite(value) and (value > 0 or not positive))
                ),
                message=f"--{field.name} must be a {'positive ' * positive}finite number",
            )
        else:  # str, or a str that names a number (--steps_per_loop)
            holder = flags.DEFINE_string(field.name, default, help_text)
        holders[field.name] = holder
    return holders


def refuse_arguments(argv: list[str]) -> None:
    """Exit 2 with one line for anything left after the flags (a typo like `-epochs 3`)."""
    if len(argv) > 1:
        print(
            f"tf_mgpu: error: unexpected arguments: {' '.join(argv[1:])}; flags take the "
            f"form --name=value, see --helpfull",
            file=sys.stderr,
        )
        sys.exit(errors.EXIT_USAGE)


def quiet_tensorflow() -> None:
    """Unless --verbosity is given: no INFO logs from TensorFlow and TFDS, no C++ logs.

    They log every traced collective, file read and SavedModel load at INFO, and
    each aborted collective at ERROR, burying our lines and one-line errors;
    --verbosity=0 shows them. Must run before TensorFlow is imported.
    """
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def run(work: Callable[[], None]) -> None:
    """Runs `work`, prints a Failure as its one line, and ends the process with its code."""
    try:
        work()
    except errors.Failure as e:
        print(errors.line(e), file=sys.stderr, flush=True)
        exit_now(e.exit_code)
    exit_now(errors.EXIT_OK)


def exit_now(code: int) -> None:
    """Ends the process now: TensorFlow's multi-worker runtime otherwise lingers at exit
    (about 40 s) waiting on peers that are already gone. Every file is closed by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
