"""The per-example checks: label range, finiteness and shapes, with one message each.

Run on a task's splits before training (`check_data`, `check_labels`) and on
the model's inputs (`check_inputs`); splits read by index or as tf.data are
checked as they are read (`source`, `stream_checks`), naming the same problems.
"""

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.engine.input import arrays, data, source, stream
from tf_mgpu.errors import UserError


def check_inputs(model: keras.Model, x, where: str) -> None:
    """UserError unless the model's inputs take examples shaped like `x`'s.

    A model without declared inputs (a subclassed model) is checked by
    calling it instead; see `tf_mgpu.engine.state.training_state.create_state`.
    """
    inputs = getattr(model, "inputs", None)
    if not inputs:
        return
    try:
        _check_inputs(model, inputs, x, where)
    except UserError as e:
        if getattr(model, "preprocessor", None) is None:
            raise
        # A KerasHub task: its own fit maps the preprocessor over the data first.
        raise UserError(
            f"{e}; {type(model).__name__} holds a preprocessor, which KerasHub's fit runs on "
            f"the raw data: run it in load_data() (preprocessor(x) gives x, y and the sample "
            f"weights, as examples/hub_causal_lm_lora_task.py does) and build the model with "
            f"preprocessor=None"
        ) from None


def _check_inputs(model: keras.Model, inputs: list, x, where: str) -> None:
    if isinstance(x, dict):
        # A model built from a dict of inputs is keyed as built (fit matches x's keys to
        # the dict's), else by its inputs' names.
        given = getattr(model, "input", None)
        names = given if isinstance(given, dict) else {t.name: t for t in inputs}
        missing = sorted(set(names) - set(x))
        if missing:
            raise UserError(
                f"{where}: the model's inputs {', '.join(missing)} are not keys of load_data's "
                f"x (it has {', '.join(sorted(x))}); name the arrays of x like the model's "
                f"keras.Input(name=...)"
            )
        pairs = [(name, names[name], x[name]) for name in sorted(names)]
    elif isinstance(x, tuple):
        if len(inputs) != len(x):
            raise UserError(
                f"{where}: the model takes {len(inputs)} inputs but load_data's x is a list of "
                f"{len(x)} arrays; give one array per input, in the model's order"
            )
        pairs = [
            (f"x[{i}]", spec, array) for i, (spec, array) in enumerate(zip(inputs, x, strict=True))
        ]
    else:
        if len(inputs) != 1:
            raise UserError(
                f"{where}: the model takes {len(inputs)} inputs but load_data's x is one "
                f"array; return x as a dict keyed by the inputs' names"
            )
        pairs = [("x", inputs[0], x)]
    for name, spec, array in pairs:
        expected = tuple(spec.shape[1:])
        got = tuple(np.shape(array)[1:])
        # Keras's functional call adds or drops a last axis of 1 (`(n,)` for Input((1,))).
        if expected[-1:] == (1,) and len(got) == len(expected) - 1:
            got = (*got, 1)
        elif got[-1:] == (1,) and len(got) == len(expected) + 1:
            got = got[:-1]
        fits = len(expected) == len(got) and all(
            e is None or e == g for e, g in zip(expected, got, strict=True)
        )
        if not fits:
            shown = tuple("None" if e is None else e for e in expected)
            raise UserError(
                f"{where}: load_data's {name} has examples of shape {got}, but the model "
                f"takes {shown}; reshape the data or change the model's keras.Input"
            )


def check_data(datasets: data.Data, where: str) -> None:
    """UserError for data no model can train on: a non-finite value, or a test split
    whose examples are shaped unlike the training split's. Arrays mapped from files
    (np.memmap) are not scanned: they are read by index and checked as read
    (`tf_mgpu.engine.input.placement`)."""
    check_finite(datasets, where, mapped=False)
    train = _shapes(datasets.train)
    for name, split in _named_splits(datasets)[1:]:
        shapes = _shapes(split)
        # Splits of other forms (a model whose own train_step takes pairs of views and
        # whose test_step takes images) are the model's to take, as in Keras's fit.
        if _form(shapes) == _form(train) and shapes != train:
            raise UserError(
                f"{where}: the {name} split's examples are shaped {_shapes(split)}, the "
                f"training split's {train}; load_data() must return every split in one form"
            )


def check_finite(datasets: data.Data, where: str, *, mapped: bool) -> None:
    """UserError for a non-finite value in the arrays held in memory (`mapped` False), or
    in those mapped from files (True: read whole, for --input=resident or stream)."""
    for name, split in _named_splits(datasets):
        for key, bad in _nonfinite(split, mapped).items():
            if bad:
                raise UserError(
                    f"{where}: {data.in_split(key, name)} holds {bad:,} non-finite values (NaN or "
                    f"inf); clean or impute them in load_data()"
                )


def _named_splits(datasets: data.Data) -> list:
    named = [("train", datasets.train), ("test", datasets.test)]
    return named + ([("validation", datasets.validation)] if datasets.validation else [])


def _nonfinite(split, mapped: bool = False) -> dict:
    """Input name (or "x"), "y" (or y['price']...) -> how many NaN or inf values it holds,
    of the arrays mapped from files or not (`mapped`). A source read by index checks
    each example as it is read instead."""
    if isinstance(split, source.Source):
        return {}
    if isinstance(split, stream.Stream):
        return {} if mapped else split.nonfinite
    weights = [] if split.w is None else [("sample_weight", split.w)]
    return {
        key: int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        for key, array in [*data.features(split.x), *data.labelled(split.y), *weights]
        if np.issubdtype(array.dtype, np.inexact) and arrays.is_mapped(array) == mapped
    }


def _form(shapes: dict) -> tuple:
    """The structure of a split's shapes: its inputs' names, and its labels' (one array, or
    the keys or count of several)."""
    y = shapes.get("y")
    if isinstance(y, dict):
        labels = tuple(sorted(y))
    elif isinstance(y, tuple) and y and all(isinstance(part, tuple) for part in y):
        labels = len(y)
    else:
        labels = "one"
    return tuple(sorted(key for key in shapes if key != "y")), labels


def _shapes(split) -> dict:
    if isinstance(split, (stream.Stream, source.Source)):
        return split.shapes()
    y = tf.nest.map_structure(lambda a: tuple(np.shape(a)[1:]), split.y)
    return {**{k: tuple(np.shape(v)[1:]) for k, v in data.features(split.x)}, "y": y}


def _label_range(split, head=None) -> tuple:
    """(smallest label, largest label, whether every label is an integer), of the labels of
    output `head` (a `heads.Head`) for a model with several."""
    if isinstance(split, stream.Stream):
        return split.label_range if head is None else head.labels(split.label_range)
    y = split.y if head is None else head.labels(split.y)
    integral = np.issubdtype(y.dtype, np.integer) or np.array_equal(y, np.round(y))
    return float(y.min()), float(y.max()), bool(integral)


def check_labels(classes: int | dict | None, datasets: data.Data, where: str) -> None:
    """UserError unless sparse labels (integers, for a sparse categorical loss over
    `classes` outputs) lie in [0, classes); for several outputs, `classes` maps each
    `heads.Head` with such a loss to its classes."""
    if classes is None:
        return
    each = classes.items() if isinstance(classes, dict) else [(None, classes)]
    for name, split in _named_splits(datasets):
        if isinstance(split, source.Source) or getattr(split, "checked_as_read", False):
            split.expect_classes(classes)  # checked as each example is read
            continue
        for head, count in each:
            _check_range(_label_range(split, head), count, where, _labels_of(split, name, head))


def _labels_of(split, name: str, head) -> str:
    """How errors name the labels of `head` (None: the only ones) in split `name`."""
    if head is None:
        return f"y_{name}"
    labels = split.label_range if isinstance(split, stream.Stream) else split.y
    shown = head.label(labels, f"y_{name}")
    return shown if isinstance(labels, dict) else f"{shown} (output {head.name!r})"


def _check_range(found: tuple, classes: int, where: str, labels: str) -> None:
    low, high, integral = found
    if not integral:
        raise UserError(
            f"{where}: {labels} holds non-integer labels, but the model is compiled with "
            f"a sparse categorical loss; give class indices 0..{classes - 1}"
        )
    if low < 0 or high >= classes:
        raise UserError(
            f"{where}: {labels} holds labels from {low:g} to {high:g}, but the model "
            f"outputs {classes} classes (0..{classes - 1}); give the last "
            f"layer {int(high) + 1} units or renumber the labels"
        )
