"""The trained model as files that outlive training: `model.keras` and a SavedModel.

  model.keras    the task's model, compiled as build_model() compiled it, with
                 the trained weights: `keras.saving.load_model` reads it back
                 (custom layers need their module importable, as in Keras).
  saved_model/   `model.export`'s SavedModel, for TF Serving: `serve` takes
                 what the model takes.

Both are float32 copies built outside any strategy, whatever dtype training
used, so neither building nor saving involves a collective. Each is written
under another name and renamed into place: a killed run never leaves half an
export. A task may export otherwise (`export(model, model_dir)`, as the
built-in MNIST tasks do).
"""

import os
import shutil
import zipfile
from collections.abc import Callable

import keras
import tensorflow as tf

from tf_mgpu.engine import objective
from tf_mgpu.errors import UserError

KERAS = "model.keras"
SAVED_MODEL = "saved_model"


def save(model: keras.Model, model_dir: str) -> list[str]:
    """Writes a float32 copy of `model` into `model_dir`; returns the paths written.

    Call it outside any strategy scope, on the chief only. Raises OSError if
    the disk refuses.
    """
    exported = float32_copy(model)
    write_keras(exported, model_dir)
    write_dir(
        os.path.join(model_dir, SAVED_MODEL), lambda folder: exported.export(folder, verbose=False)
    )
    return [os.path.join(model_dir, KERAS), os.path.join(model_dir, SAVED_MODEL)]


def float32_copy(model: keras.Model) -> keras.Model:
    """A copy of `model` with float32 layers, the trained weights, and the same compile.

    Its variables are new and outside any strategy, so saving it reads no
    mirrored or sync-on-read variable (reading those can be collective).
    """
    if tf.distribute.has_strategy():
        raise RuntimeError("export outside strategy.scope(): variables made inside are mirrored")

    def float32_layer(layer):
        return type(layer).from_config({**layer.get_config(), "dtype": "float32"})

    copy = keras.models.clone_model(model, clone_function=float32_layer)
    copy.set_weights(model.get_weights())
    optimizer = model.optimizer
    copy.compile(
        optimizer=type(optimizer).from_config(optimizer.get_config()),
        loss=model.loss,
        metrics=[_fresh(m) for m in objective.compiled_metrics(model)],
    )
    return copy


def _fresh(metric):
    """A new metric like `metric`: the compiled one's variables belong to the strategy."""
    if isinstance(metric, keras.metrics.Metric):
        return type(metric).from_config(metric.get_config())
    return metric


def write_keras(model: keras.Model, model_dir: str) -> str:
    """`model` saved as `model_dir/model.keras`, atomically; returns the path."""
    path = os.path.join(model_dir, KERAS)
    partial = os.path.join(model_dir, "partial." + KERAS)  # Keras insists on the suffix
    model.save(partial)
    os.replace(partial, path)
    return path


def remove(model_dir: str) -> None:
    """Deletes what an export writes into `model_dir`, leftovers of a killed one included."""
    for name in (KERAS, "partial." + KERAS):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            os.remove(path)
    for suffix in ("", ".partial", ".old"):
        shutil.rmtree(os.path.join(model_dir, SAVED_MODEL + suffix), ignore_errors=True)


def write_dir(path: str, write: Callable[[str], None]) -> None:
    """Runs `write(folder)` on a fresh folder, then renames that folder to `path`.

    A folder cannot be renamed onto a non-empty one, so an old `path` first
    steps aside as `path.old`: a run killed between the two renames leaves no
    `path`, and the complete old export beside it, never half of one.
    """
    partial, old = path + ".partial", path + ".old"
    for leftover in (partial, old):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        write(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a full disk gets its space back
        raise
    if os.path.exists(path):
        os.replace(path, old)
    os.replace(partial, path)
    shutil.rmtree(old, ignore_errors=True)


def locate(path: str) -> str:
    """The .keras model at `path`: the file itself, or a model dir's `model.keras`."""
    if os.path.isdir(path):
        path = os.path.join(path, KERAS)
    if not (os.path.isfile(path) and path.endswith(".keras")):
        raise UserError(
            f"--model={path} is not a .keras model; pass the --model_dir of a finished run "
            f"or its {KERAS}"
        )
    return path


def load(path: str) -> keras.Model:
    """The compiled Keras model at `path`; load it in the strategy's scope to mirror it."""
    try:
        return keras.saving.load_model(path, compile=True)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise UserError(f"--model={path} cannot be read as a Keras model ({e})") from None
