"""Several outputs: which labels and which prediction each output takes, and compile's
arguments spread over the outputs, as Keras 3 pairs and names them.

A model may return a list or a dict of outputs. Keras names each by
`model.output_names` (a dict's keys, sorted) and pairs it with labels given
as a dict keyed by those names, or as a list or tuple in their order. Each of
compile's `loss`, `loss_weights` and `metrics` may be a dict keyed by the
names, a list in their order, or (loss, loss_weights) one value for every
output. The engine keeps the labels and outputs in the form they came in and
picks each output's part while tracing (`Head.of`), which adds no op to a step.
"""

import dataclasses

from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True)
class Head:
    """One output of several: its name, as Keras names it, its place among them, and where
    its labels are: `slot` None when the labels are one array (the only output compiled
    with a loss), else their key in a dict or place in a list."""

    name: str
    index: int
    slot: object = dataclasses.field(default=None, compare=False)

    def of(self, values):
        """This output's part of the predictions: a dict's by name, a list's by place."""
        return values[self.name] if isinstance(values, dict) else values[self.index]

    def labels(self, y):
        """This output's labels within the labels `y` (or within anything shaped as them)."""
        return y if self.slot is None else y[self.slot]

    def label(self, labels, prefix: str) -> str:
        """How errors name its labels within `labels`, named `prefix`: y_train['price'] for
        a dict, y_train[0] for a list, y_train for the one array."""
        if self.slot is None:
            return prefix
        return f"{prefix}[{self.slot!r}]" if isinstance(labels, dict) else f"{prefix}[{self.slot}]"


def nested(values) -> bool:
    return isinstance(values, (list, tuple, dict))


def of_model(model, y, y_pred, where: str) -> tuple[Head, ...] | None:
    """The model's outputs that take labels (those compiled with a loss), as heads checked
    against the labels `y` of a few examples; None for a model with one output (a tensor),
    whose labels must be one array.

    `y_pred` is the model's output on those examples. As Keras's compiled loss pairs them,
    an output compiled with loss None takes no labels: `y` holds the others' only (one
    array when one output has a loss). UserError, in one line naming both sides, when the
    labels do not fit the outputs.
    """
    outputs = list(y_pred.values()) if isinstance(y_pred, dict) else y_pred
    if not nested(y_pred) or len(outputs) == 1:
        if nested(y):
            raise UserError(
                f"{where}: load_data's y is a {type(y).__name__} of labels, but the model has "
                f"one output; give y as one array"
            )
        return None
    if any(nested(output) for output in outputs):
        raise UserError(
            f"{where}: the model's outputs are nested lists or dicts; tf_mgpu trains a flat "
            f"list or dict of outputs"
        )
    every = all_outputs(model, y_pred, where)
    names = [head.name for head in every]
    losses = spread(model.loss, every, "loss", where, some=True)
    taking = [head for head, loss in zip(every, losses, strict=True) if loss is not None]
    if not taking:
        raise UserError(f"{where}: compile's loss gives none of the model's outputs a loss")
    given = [head.name for head in taking]
    # The outputs that take labels: all of them, or (some compiled with loss None) those.
    which = "outputs" if len(taking) == len(every) else "outputs with a loss"
    if isinstance(y, dict):
        if set(y) != set(given) and set(y) != set(names):
            raise UserError(
                f"{where}: load_data's y is a dict keyed {_listed(sorted(y))}, but the model's "
                f"{which} are named {_listed(given)}; key y by "
                + ("the outputs' names" if which == "outputs" else "those names")
            )
        return tuple(Head(h.name, h.index, h.name) for h in taking)
    if isinstance(model.loss, dict) and set(model.loss) != set(names):
        missing = [name for name in names if name not in model.loss]
        raise UserError(
            f"{where}: compile's loss is a dict that names no loss for {_listed(missing)}, "
            f"so Keras pairs labels with outputs only by name: give y as a dict keyed by the "
            f"outputs' names, or give {_listed(missing)} loss None"
        )
    if isinstance(y, (list, tuple)):
        if len(y) == len(names):
            return tuple(Head(h.name, h.index, h.index) for h in taking)
        if len(y) != len(taking):
            raise UserError(
                f"{where}: load_data's y is a {type(y).__name__} of {len(y)} label arrays, but "
                f"the model has {len(given)} {which} ({_listed(given)}); give one per output"
            )
        return tuple(Head(h.name, h.index, slot) for slot, h in enumerate(taking))
    if len(taking) == 1:
        return (taking[0],)  # slot None: y is its labels
    raise UserError(
        f"{where}: the model has {len(given)} {which} ({_listed(given)}), but load_data's y "
        f"is one array; give y as a dict keyed by the outputs' names, or a list of arrays in "
        f"their order"
    )


def all_outputs(model, y_pred, where: str) -> tuple[Head, ...]:
    """Every output of a model with several, as a head (its labels' slot not set)."""
    return tuple(Head(name, index) for index, name in enumerate(_names(model, y_pred, where)))


def _names(model, y_pred, where: str) -> list[str]:
    """The outputs' names: the model's `output_names`, or a dict's keys (sorted), as Keras
    prefers them when they differ."""
    names = list(getattr(model, "output_names", None) or [])
    if isinstance(y_pred, dict) and set(names) != set(y_pred):
        names = sorted(y_pred)
    if len(names) != len(y_pred) or len(set(names)) != len(names):
        raise UserError(
            f"{where}: the model's {len(y_pred)} outputs have no names of their own; return "
            f"them as a dict keyed by name, or name the layers that make them"
        )
    return names


def spread(given, heads: tuple[Head, ...], what: str, where: str, *, some: bool = False) -> list:
    """Compile's `what` (loss, loss_weights, metrics) as one entry per head, in their order.

    A dict is keyed by the outputs' names (by some of them when `some`: the others get
    None); a list or tuple of one entry per output is taken in their order; anything
    else applies to every output, except for (weighted) metrics, which Keras takes per
    output only.
    """
    names = [head.name for head in heads]
    if isinstance(given, dict):
        unknown = sorted(set(given) - set(names))
        missing = [] if some else [name for name in names if name not in given]
        if unknown or missing:
            raise UserError(
                f"{where}: compile's {what} is a dict keyed {_listed(list(given))}, but the "
                f"model's outputs are named {_listed(names)}; key it by those names"
            )
        return [given.get(name) for name in names]
    if isinstance(given, (list, tuple)) and len(given) == len(heads):
        return list(given)
    if what in ("metrics", "weighted_metrics"):
        raise UserError(
            f"{where}: compile's {what}={given!r} does not say which of the model's "
            f"{len(heads)} outputs ({_listed(names)}) each metric measures; give a dict keyed "
            f"by their names, e.g. {what}={{{names[0]!r}: ['mae']}}, or one list per output"
        )
    if isinstance(given, (list, tuple)):
        raise UserError(
            f"{where}: compile's {what} is a list of {len(given)}, but the model has "
            f"{len(heads)} outputs ({_listed(names)}); give one entry per output, or a dict "
            f"keyed by their names"
        )
    return [given] * len(heads)


def _listed(names) -> str:
    return ", ".join(str(name) for name in names)
