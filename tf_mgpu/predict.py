"""Runs an exported model on images (MNIST tasks) or on arrays of inputs (any task).

  python -m tf_mgpu.predict --model=/tmp/tf_mgpu a.png b.png
  a.png: 7 (p=0.998)
  b.png: 2 (p=0.951)

  python -m tf_mgpu.predict --model=/tmp/run --task=my_task.py inputs.npz
  inputs.npz: 1,000 examples -> inputs.predictions.npy (1000, 3) float32; argmax counts ...

Arrays: a .npy holds x for a one-input model; a .npz holds one array per
model input, keyed by the input's name (or a single array for a one-input
model). The model's outputs are saved next to each input file as
`<name>.predictions.npy`, and one line per file says where. A model with
several outputs gets `<name>.predictions.npz` instead, one array per output
keyed by the output's name, as Keras names it (`np.load(path)["price"]`):

  inputs.npz: 500 examples -> inputs.predictions.npz: price (500, 1) float32 | kind ...

--task imports
the task file first, so functions it defines (a custom metric, say) are
found when the model loads; by default, the task of the run that made
--model, from its flags.txt (in the --model_dir, or beside --model). Arrays
are read and checked before TensorFlow loads; a file that cannot be read is
one line and exit code 3.

Images:
--model takes a run's --model_dir (its model.keras is read), a .keras file
or (for images) a SavedModel folder. Each image is a PNG (or any file Pillow reads):
28x28 greyscale with a white digit on black, as MNIST draws them, is used
as is. Any other is converted: transparency laid over white, colour to
greyscale, and an image whose border is light on average (a dark digit on
white paper) is INVERTED to MNIST's white on black; then it is resized to
fit 28x28 keeping its aspect ratio, and padded with black to 28x28.
Nothing is cropped or centred: frame the digit as MNIST does, about 20x20
pixels in the middle of 28x28. An image that cannot be read is one line
and exit code 3, before the model loads.
"""

# The only module that defines these flags; tf_mgpu.outputs.flagfile sets --task from the run's
# flags.txt, tf_mgpu.images and tf_mgpu.outputs.export do the work.

import os
import sys

import numpy as np
from absl import app, flags

from tf_mgpu import cli, errors
from tf_mgpu.outputs import flagfile
from tf_mgpu.tasks.mnist import images

_MODEL = flags.DEFINE_string(
    "model", None, "A run's --model_dir, its model.keras, or its saved_model/ folder."
)
_TASK = flags.DEFINE_string(
    "task",
    None,
    "For arrays: the task the model was trained on, imported before it loads; default: the "
    "run's, from flags.txt in the --model_dir (or beside --model).",
)
ARRAYS = (".npy", ".npz")


def predict_arrays(paths: list[str]) -> list[str]:
    """One line per file: the predictions' shape (each output's, for several) and where
    they were saved."""
    flagfile.take(_MODEL.value)  # the run's --task, where not given
    inputs = [_read_array(path) for path in paths]
    # TensorFlow loads here, once every file has been read.
    from tf_mgpu.outputs import export
    from tf_mgpu.tasks import adapter

    own = None
    if _TASK.value:
        # The task's own losses, metrics and functions, found on a model it builds (what the
        # export found them on): importing the file does not register a plain function.
        own = export.own_objects(adapter.load(_TASK.value).build_model())
    model = export.load(export.locate(_MODEL.value), own)
    lines = []
    for path, x in zip(paths, inputs, strict=True):
        x = _for_model(model, x, path)
        outputs = _named(model, model.predict(x, batch_size=256, verbose=0))
        if len(outputs) == 1:
            (predictions,) = outputs.values()
            out = os.path.splitext(path)[0] + ".predictions.npy"
            np.save(out, predictions)
            line = f"{path}: {len(predictions):,} examples -> {out} {_described(predictions)}"
        else:
            out = os.path.splitext(path)[0] + ".predictions.npz"
            np.savez(out, **outputs)
            examples = len(next(iter(outputs.values())))
            each = " | ".join(f"{name} {_described(a)}" for name, a in outputs.items())
            line = f"{path}: {examples:,} examples -> {out}: {each}"
        lines.append(line)
    return lines


def _named(model, predictions) -> dict:
    """The model's predictions as {output name: array}: one entry for a one-output model;
    for several, Keras's names (a dict's keys, else `model.output_names`)."""
    if isinstance(predictions, dict):
        return {name: np.asarray(a) for name, a in predictions.items()}
    if not isinstance(predictions, (list, tuple)):
        return {"output": np.asarray(predictions)}
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(predictions) or len(set(names)) != len(names):
        names = [f"output_{k}" for k in range(len(predictions))]
    return {name: np.asarray(a) for name, a in zip(names, predictions, strict=True)}


def _described(predictions: np.ndarray) -> str:
    """Shape and dtype, and for class scores how often each class scores highest."""
    said = f"{predictions.shape} {predictions.dtype}"
    if predictions.ndim == 2 and predictions.shape[1] > 1:
        counts = np.bincount(predictions.argmax(axis=1), minlength=predictions.shape[1])
        said += "; argmax counts " + ", ".join(f"{k}: {n}" for k, n in enumerate(counts))
    return said


def _read_array(path: str):
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as archive:
                return {key: archive[key] for key in archive.files}
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise errors.UserError(f"cannot read {path} as a NumPy array file ({e})") from None


def _for_model(model, x, path: str):
    """`x` as the model takes it: a dict keyed by input names, or one array."""
    names = [t.name for t in getattr(model, "inputs", None) or []]
    if isinstance(x, dict) and len(x) == 1 and len(names) <= 1:
        (x,) = x.values()
    if isinstance(x, dict):
        missing = sorted(set(names) - set(x))
        if missing:
            raise errors.UserError(
                f"{path} lacks the model's inputs {', '.join(missing)} (it holds "
                f"{', '.join(sorted(x))}); save one array per input, named like the input"
            )
        return {name: x[name] for name in names}
    return x


def predict(paths: list[str]) -> list[str]:
    """One line per image: its path, the most probable digit and its probability."""
    pixels = np.stack([images.read(path) for path in paths])
    # TensorFlow loads here, once every image has been read.
    from tf_mgpu.tasks.mnist import serving

    probabilities = serving.load(_MODEL.value)(pixels).numpy()
    return [
        f"{path}: {digit} (p={p[digit]:.3f})"
        for path, p, digit in zip(paths, probabilities, probabilities.argmax(axis=1), strict=True)
    ]


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        print(
            "tf_mgpu: error: no inputs given; usage: python -m tf_mgpu.predict --model=PATH "
            "IMAGE.png... or ARRAYS.npz...",
            file=sys.stderr,
        )
        sys.exit(errors.EXIT_USAGE)
    cli.quiet_tensorflow()
    paths = argv[1:]
    arrays = [p for p in paths if p.endswith(ARRAYS)]
    if arrays and len(arrays) != len(paths):
        print(
            "tf_mgpu: error: give images or .npy/.npz arrays, not both in one call",
            file=sys.stderr,
        )
        sys.exit(errors.EXIT_USAGE)
    run = predict_arrays if arrays else predict
    cli.run(lambda: print("\n".join(run(paths))))


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    app.run(main, flags_parser=cli.parse_flags)
