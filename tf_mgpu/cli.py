"""What every command-line entry point shares: absl's parser with one-line errors,
quiet TensorFlow logs, and a prompt exit.

Each CLI (`main`, `evaluate`, `predict`, `launch`, `sweep`, `bench`) defines
its own flags; this module defines none, so importing it clashes with none.
"""

import dataclasses
import functools
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from absl import flags, logging

from tf_mgpu import config_checks, errors


def parse_flags(argv: list[str]) -> list[str]:
    """absl's parser, but a bad flag is one line and exit code 2 (absl's own uses 1)."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        usage_error(flag_error(e))


def flag_error(error: flags.Error) -> str:
    """absl's message as one line: each bad flag's, and a flagfile that cannot be opened
    named as such (absl says 'ERROR:: Unable to open flagfile: [Errno 2] ...')."""
    if isinstance(error, flags.CantOpenFlagFileError):
        found = re.search(r"\[Errno \d+\] (.+): '(.*)'$", str(error))
        if found:
            reason, path = found.groups()
            return f"--flagfile={path}: cannot open it ({reason}); check the path"
        return f"--flagfile: {str(error).removeprefix('ERROR:: ')}"
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


def usage_error(message: str) -> NoReturn:
    """Exit 2 with one line: a bad command line."""
    print(f"tf_mgpu: error: {message}; see --helpfull", file=sys.stderr)
    sys.exit(errors.EXIT_USAGE)


class _AutoBooleanParser(flags.ArgumentParser):
    def parse(self, argument):
        return config_checks.parse_jit_compile(argument)

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
    help (formatted with `formats`) and choices; absl parses the text as the field's type,
    and each flag is then checked by the same `config_checks.normalized` as every Config,
    so the bounds live in the declarations only. Returns the flag holders by name, in the
    fields' order."""
    holders = {}
    for field in dataclasses.fields(config_class):
        meta = field.metadata
        default = meta.get("command_default", field.default)
        help_text = meta["help"].format(**formats)
        kinds = config_checks.kinds(field)
        if meta["choices"]:
            holder = flags.DEFINE_enum(field.name, default, meta["choices"], help_text)
        elif kinds == {bool}:
            holder = flags.DEFINE_boolean(field.name, default, help_text)
        elif kinds == {bool, str}:
            holder = define_auto_boolean(field.name, default, help_text)
        elif kinds == {int}:
            parser = _Described(flags.IntegerParser(), config_checks.describe(field))
            holder = flags.DEFINE(parser, field.name, default, help_text, serializer=_TEXT)
        elif kinds == {float}:
            parser = _Described(flags.FloatParser(), config_checks.describe(field))
            holder = flags.DEFINE(parser, field.name, default, help_text, serializer=_TEXT)
        else:  # str, or a str that names a number (--steps_per_loop)
            holder = flags.DEFINE_string(field.name, default, help_text)
        flags.register_validator(field.name, functools.partial(_check, field))
        holders[field.name] = holder
    return holders


_TEXT = flags.ArgumentSerializer()


class _Described(flags.ArgumentParser):
    """absl's parser of a number, whose --help says what the setting takes: 'an integer of
    at least 1', as the check's message does."""

    def __init__(self, parser: flags.ArgumentParser, takes: str):
        self._parser, self.syntactic_help = parser, takes

    def parse(self, argument):
        return self._parser.parse(argument)

    def flag_type(self) -> str:
        return self._parser.flag_type()


def _check(field, value) -> bool:
    try:
        config_checks.normalized(field, value)
    except ValueError as e:
        raise flags.ValidationError(str(e)) from None
    return True


def refuse_arguments(argv: list[str]) -> None:
    """Exit 2 with one line for anything left after the flags (a typo like `-epochs 3`)."""
    if len(argv) > 1:
        usage_error(f"unexpected arguments: {' '.join(argv[1:])}; flags take the form --name=value")


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
