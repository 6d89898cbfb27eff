"""Checkpoints of the whole training state, so a run resumes exactly where it stopped.

A checkpoint holds the model's weights, the optimizer's step count and slots,
the finished-epoch counter and the running sums of the current epoch's
training metrics. The epoch order is a pure function of (seed, epoch) (see
`tf_mgpu.engine.input.data`), so the step count and the epoch say which example comes
next: a resumed run trains on the same examples in the same order, and ends
with the same weights bit for bit.

Layout, in `--model_dir/checkpoints/`:
  ckpt-<step>.index, ckpt-<step>.data-*   one per save, named by optimizer step
  ckpt-<step>.state.json                  what is not a variable (a task's Keras callbacks)
  ckpt-<step>.input-<worker>-of-<layout>.*  a tf.data split's iterator, one per worker
  run.json                                what must match for a resume (`fingerprint`)

Saves are atomic: TensorFlow writes a checkpoint into temporary files and
renames its index into place last, and older checkpoints are deleted only
after a newer one is complete, so a process killed while saving leaves the
previous checkpoint usable. Restore tries the newest first and falls back
past any it cannot read.

Under MultiWorkerMirroredStrategy every worker takes part in each save
(reading the metric sums is collective) and only the chief writes the
checkpoint into `--model_dir`; the others write theirs into a temporary
directory of their own and delete it. Every worker training from a tf.data
split also writes its own place in that data beside each checkpoint
(`ckpt-<step>.input-<worker>-of-<layout>`, see `tf_mgpu.engine.step.stream_train`).
Every worker restores from `--model_dir`: across machines it must be on
storage every worker can read, as for TensorFlow's own BackupAndRestore.
"""

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable

import tensorflow as tf

from tf_mgpu import strict_json
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.errors import UserError

DIRECTORY = "checkpoints"
RUN_FILE = "run.json"
KEEP = 3  # newest checkpoints kept; older ones are deleted after each save
_NAME = re.compile(r"^ckpt-(\d+)\.index$")

# What `fingerprint` records, and why a difference refuses a resume.
_MUST_MATCH = {
    "weights": "another model (other weight shapes)",
    "train_examples": "another training split, which changes the data order",
    "seed": "another --seed, which changes the data order",
    "global_batch": "another global batch, which changes the data order",
}
# Recorded too; a difference is allowed and reported.
_MAY_CHANGE = ("learning_rate", "scale_lr", "warmup_epochs", "dtype", "sync_batch_norm")


def fingerprint(
    weights: list, *, train_examples: int, seed: int, global_batch: int, recipe: dict
) -> dict:
    """What identifies a run's trajectory: restoring into any other would mix two runs."""
    return {
        "weights": [[w.path, list(w.shape)] for w in weights],
        "train_examples": train_examples,
        "seed": seed,
        "global_batch": global_batch,
        **{key: recipe[key] for key in _MAY_CHANGE},
    }


def incompatibility(saved: dict, current: dict) -> str | None:
    """Why a run with fingerprint `current` cannot resume one with `saved`, or None."""
    for key, meaning in _MUST_MATCH.items():
        if key == "weights":
            # Shapes in order, as tf.train.Checkpoint matches them; Keras numbers layer
            # names per process (dense, dense_1, ...), so a second model built in one
            # process has other names and is still the same model.
            if _shapes(saved.get(key)) != _shapes(current[key]):
                return meaning
        elif saved.get(key) != current[key]:
            return f"{meaning}: {key} {saved.get(key)} there, {current[key]} now"
    return None


def _shapes(weights) -> list | None:
    return None if weights is None else [shape for _, shape in weights]


def changes(saved: dict, current: dict) -> list[str]:
    """Settings that differ from the saved run's and are allowed to, as 'name: old -> new'."""
    return [
        f"--{key} {saved[key]} -> {current[key]}"
        for key in _MAY_CHANGE
        if key in saved and saved[key] != current[key]
    ]


def step_of(path: str) -> int:
    """The optimizer step in a checkpoint's name."""
    return int(path.rsplit("-", 1)[1])


class Checkpoints:
    """Saves and restores `objects` (name -> trackable) in `model_dir/checkpoints`.

    `is_chief` False saves into a private temporary directory that is
    deleted after each save; such a task never writes into `model_dir`.
    `warn` receives one line per checkpoint skipped as unreadable. `extra`, if
    given, holds state that is not variables: its `state()` (strict JSON) is
    written beside each checkpoint the chief saves, before the checkpoint
    itself, and handed to its `restore(state)` with that checkpoint (None for a
    checkpoint saved without it: a run that had no such state then).
    `objects` holds variables, lists and dicts of them; a restore matches them by
    name ('weights/3', 'optimizer/slot_0_momentum', 'epoch'), and those `may_lack(name)`
    allows may be missing from the checkpoint (written under another --dtype).
    `settle(saved)`, if given, is called after each restore with `saved(name)`, the
    checkpoint's value of `name` or None.
    `inputs`, if given, saves each worker's place in its data beside each
    checkpoint (`save(prefix)`, every worker, into the checkpoint directory,
    before the checkpoint itself) and is told which checkpoint was restored
    (`restore(prefix)`).
    """

    def __init__(
        self,
        objects: dict,
        model_dir: str | None,
        *,
        is_chief: bool,
        keep: int = KEEP,
        warn: Callable[[str], None] = print,
        extra=None,
        inputs=None,
        may_lack: Callable[[str], bool] = lambda name: False,
        settle: Callable[[Callable[[str], object]], None] | None = None,
    ):
        self._objects = objects
        self._checkpoint = tf.train.Checkpoint(**objects)
        # What each save writes (its deadline grows with it: `Liveness.saving`).
        self.state_bytes = sum(
            math.prod(v.shape) * tf.as_dtype(v.dtype).size for _, v in _flat(objects)
        )
        self._may_lack = may_lack
        self._settle = settle
        self._extra = extra
        self._inputs = inputs
        self.resumed_input = ""  # what `inputs.restore` said of the restored checkpoint
        self.directory = os.path.join(model_dir, DIRECTORY) if model_dir else None
        self._is_chief = is_chief
        self._keep = keep
        self._warn = warn
        self.latest: str | None = None  # the newest complete checkpoint, once known

    # -- what is there -------------------------------------------------------

    def paths(self) -> list[str]:
        """Complete checkpoints in the directory, oldest first."""
        if self.directory is None or not os.path.isdir(self.directory):
            return []
        steps = sorted(
            int(match.group(1)) for match in map(_NAME.match, os.listdir(self.directory)) if match
        )
        return [os.path.join(self.directory, f"ckpt-{step}") for step in steps]

    def saved_fingerprint(self) -> dict | None:
        path = self._run_file()
        if path is None or not os.path.exists(path):
            return None
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise UserError(
                f"{path} is unreadable ({e}); rerun with --clean to start over, "
                f"or choose another --model_dir"
            ) from None

    def record(self, run: dict) -> None:
        """Writes the run's fingerprint (chief only), atomically."""
        if not self._is_chief or self.directory is None:
            return
        self._guard(lambda: os.makedirs(self.directory, exist_ok=True))
        self._guard(lambda: _write_json(self._run_file(), run))

    # -- restore and save ----------------------------------------------------

    def restore(self) -> str | None:
        """Restores the newest readable checkpoint; returns its path, or None if there is none.

        An unreadable checkpoint (truncated, corrupt) is reported in one line
        and the one before it is tried. A readable one that does not fit this run
        (another model or optimizer, another precision) is refused in one line.
        """
        paths = self.paths()
        for path in reversed(paths):
            try:
                reader = tf.train.load_checkpoint(path)
                restorable = self._restorable(path, reader.get_variable_to_dtype_map())
                tf.train.Checkpoint(**restorable).read(path).assert_existing_objects_matched()
            # What TensorFlow's reader raises on a truncated or corrupt file varies.
            except (tf.errors.OpError, ValueError, AssertionError, IndexError, RuntimeError) as e:
                reason = str(e).strip().splitlines()[0][:160]
                self._warn(
                    f"tf_mgpu: warning: checkpoint {path} is unreadable ({reason}); "
                    f"trying the one before it"
                )
                continue
            self.latest = path
            if self._settle is not None:
                self._settle(lambda name, r=reader: _value(r, name))
            if self._extra is not None:
                self._extra.restore(_read_json(path + _EXTRA))
            if self._inputs is not None:
                self.resumed_input = self._inputs.restore(path)
            return path
        if paths:
            raise UserError(
                f"no checkpoint in {self.directory} can be read (all {len(paths)} are "
                f"corrupt or truncated); rerun with --clean to start over"
            )
        return None

    def _restorable(self, path: str, saved: dict) -> dict:
        """The objects to read from checkpoint `path`, whose variables' dtypes are `saved`
        (TensorFlow's names): all of them, but those it may lack and does."""
        missing = [name for name, _ in _flat(self._objects) if name + _VALUE not in saved]
        needed = [name for name in missing if not self._may_lack(name)]
        fix = "rerun with the flags in its run's flags.txt, or pass --clean to start over"
        if needed:
            raise UserError(
                f"checkpoint {path} holds no {needed[0]} ({len(needed)} of this run's "
                f"variables are not in it): another model or optimizer wrote it; {fix}"
            )
        for name, variable in _flat(self._objects):
            held = saved.get(name + _VALUE)
            if held is not None and held != tf.as_dtype(variable.dtype):
                raise UserError(
                    f"checkpoint {path} holds {name} as {held.name} and this run makes it "
                    f"{tf.as_dtype(variable.dtype).name}: a resume keeps the precision the "
                    f"variables were trained in (--dtype=float64 against 32 bits); {fix}"
                )
        gone = set(missing)
        restorable = {}
        for top, held in self._objects.items():
            if isinstance(held, dict):
                restorable[top] = {k: v for k, v in held.items() if f"{top}/{k}" not in gone}
            elif top not in gone:
                restorable[top] = held
        return restorable

    def save(self, step: int) -> str | None:
        """Writes checkpoint `ckpt-<step>` (every task must call this at the same point)."""
        if self._inputs is not None and self.directory is not None:
            # Each worker's own place in its data; before the checkpoint, whose write
            # every worker joins, so a complete checkpoint has every worker's.
            prefix = os.path.join(self.directory, f"ckpt-{step}")
            self._guard(lambda: os.makedirs(self.directory, exist_ok=True))
            self._guard(lambda: self._inputs.save(prefix))
        if self._is_chief and self.directory is not None:
            prefix = os.path.join(self.directory, f"ckpt-{step}")
            if self._extra is not None:  # first: a complete checkpoint has its state
                self._guard(lambda: _write_json(prefix + _EXTRA, self._extra.state()))
            self._guard(lambda: self._checkpoint.write(prefix))
            self.latest = prefix
            self._prune()
            return prefix
        scratch = tempfile.mkdtemp(prefix="tf_mgpu-checkpoint-")
        try:
            self._checkpoint.write(os.path.join(scratch, f"ckpt-{step}"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if self.directory is not None:  # what the chief saved at the same step
            self.latest = os.path.join(self.directory, f"ckpt-{step}")
        return self.latest

    def clean(self) -> None:
        """Deletes every checkpoint and the run's fingerprint (chief only)."""
        if self._is_chief and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    # -- internals -----------------------------------------------------------

    def _run_file(self) -> str | None:
        return os.path.join(self.directory, RUN_FILE) if self.directory else None

    def _prune(self) -> None:
        old = tuple(os.path.basename(path) + "." for path in self.paths()[: -self._keep])
        for name in os.listdir(self.directory):
            path = os.path.join(self.directory, name)
            if name.startswith(old):
                _remove(path)
            elif name.endswith("_temp"):  # leftovers of saves killed midway
                shutil.rmtree(path, ignore_errors=True)

    def _guard(self, write: Callable[[], object]) -> object:
        """Runs `write`; a full or read-only disk becomes one UserError naming the fix.

        A peer lost while the workers write together (the write's collectives fail) is
        not the disk's fault: it goes up as it came, for the caller to name the peer."""
        try:
            return write()
        except (OSError, tf.errors.OpError) as e:
            if _peer_lost(e):
                raise
            raise UserError(self.cannot_write(f"a checkpoint into {self.directory}", e)) from None

    def cannot_write(self, what: str, error: Exception) -> str:
        """The one line for a full or read-only disk: what failed, why, and what is kept."""
        reason = getattr(error, "strerror", None) or _os_reason(str(error))
        kept = f"; the last checkpoint, {self.latest}, is intact" if self.latest else ""
        return (
            f"cannot write {what} ({reason}){kept}; free space or make it writable, then "
            f"rerun the same command to resume"
        )


_OS_REASONS = ("No space left on device", "Read-only file system", "Permission denied")


_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"  # TensorFlow's name for a variable's value


def _flat(objects: dict):
    """(name, variable) for each variable in `objects`, named as a checkpoint names them."""
    for top, held in objects.items():
        if isinstance(held, dict):
            yield from ((f"{top}/{key}", v) for key, v in held.items())
        elif isinstance(held, list | tuple):
            yield from ((f"{top}/{i}", v) for i, v in enumerate(held))
        else:
            yield top, held


def _value(reader, name: str):
    return reader.get_tensor(name + _VALUE) if reader.has_tensor(name + _VALUE) else None


def _named_os_reason(message: str) -> str | None:
    """The operating system's reason inside a TensorFlow error message, if it names one."""
    return next((r for r in _OS_REASONS if r.lower() in message.lower()), None)


def _peer_lost(error: Exception) -> bool:
    """Whether a write failed because a peer went away (its collective failed), not the
    disk: a network error, or another of the collectives' errors naming a collective op."""
    if _named_os_reason(str(error)) or not isinstance(error, collectives.PEER_ERRORS):
        return False
    return isinstance(error, collectives.NETWORK_ERRORS) or "Collective" in str(error)


def _os_reason(message: str) -> str:
    """The operating system's reason inside a TensorFlow error message, or its gist."""
    return _named_os_reason(message) or " ".join(message.split())[-160:]


_EXTRA = ".state.json"


def _read_json(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _write_json(path: str, value: dict) -> None:
    partial = path + ".partial"
    with open(partial, "w") as f:
        f.write(strict_json.dumps(value, indent=2) + "\n")
    os.replace(partial, path)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
