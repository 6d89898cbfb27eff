"""A run's flags.txt: `tf_mgpu.main` writes it, `evaluate` and `predict` read it back.

main writes every flag of the run, one `--name=value` a line, paths made absolute, so that
`--flagfile=MODEL_DIR/flags.txt` replays the run from any directory. A command that uses
the run's model takes from it what the model is and which data it was tested on
(`FROM_THE_RUN`); a flag given on the command line wins. Nothing here imports TensorFlow.
"""

import dataclasses
import os

from absl import flags

from tf_mgpu.errors import UserError

NAME = "flags.txt"
# The task (it defines the model's own functions, its loss and metrics, and loads its data)
# and the data the run was tested on; not how it trained (--epochs) nor what it did (--clean).
FROM_THE_RUN = ("task", "data_dir", "manual_dir", "test_split")


@dataclasses.dataclass(frozen=True)
class Taken:
    """What a command took from a run's flags.txt: its path (None when `--model` is in no
    folder that holds one) and the flags it set from it."""

    path: str | None = None
    names: tuple[str, ...] = ()


def find(model: str) -> str | None:
    """The flags.txt of the run `model` comes from: in `model` itself (a --model_dir), or
    beside it (its model.keras, its saved_model/); None where there is none."""
    if not os.path.exists(model):
        return None
    if os.path.isdir(model) and not _is_saved_model(model):
        folder = model
    else:
        folder = os.path.dirname(os.path.abspath(model))
    path = os.path.join(folder, NAME)
    return path if os.path.isfile(path) else None


def _is_saved_model(folder: str) -> bool:
    return any(
        os.path.isfile(os.path.join(folder, name))
        for name in ("saved_model.pb", "saved_model.pbtxt")
    )


def read(path: str) -> dict[str, str]:
    """Each flag the file sets, by name, as text: the last where one is set twice, as absl
    reads a flagfile; comments, blank lines and flags without a value are skipped."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(
            f"cannot read {path} ({e}); pass the run's flags on the command line"
        ) from None
    values = {}
    for line in lines:
        line = line.strip()
        name, equals, value = line.removeprefix("--").partition("=")
        if line.startswith("--") and equals:
            values[name] = value
    return values


def take(model: str, flag_values: flags.FlagValues = flags.FLAGS) -> Taken:
    """Sets each flag of `FROM_THE_RUN` that this command defines, and its command line did
    not give, to the value in the flags.txt of the run `model` comes from.

    A task file the run named that no longer exists is a UserError naming it and the fix:
    main wrote it as an absolute path, so it is that file or none."""
    path = find(model)
    if path is None:
        return Taken()
    recorded = read(path)
    names = []
    for name in FROM_THE_RUN:
        if name not in recorded or name not in flag_values or flag_values[name].present:
            continue
        try:
            setattr(flag_values, name, flag_values[name].parser.parse(recorded[name]))
        except (ValueError, flags.Error) as e:
            raise UserError(
                f"{path} sets --{name}={recorded[name]}, which this command cannot take "
                f"({e}); pass --{name} on the command line"
            ) from None
        names.append(name)
    task = recorded.get("task", "")
    if "task" in names and os.path.isabs(task) and not os.path.exists(task):
        raise UserError(
            f"--task={task}, the task of the run in {path}, no longer exists; the model needs "
            f"it: pass --task=PATH naming where that file is now"
        )
    return Taken(path, tuple(names))
