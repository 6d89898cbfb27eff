"""The optimizer's variables named by what they are, for a checkpoint to hold them by name.

A list in the optimizer's order would restore by position: a LossScaleOptimizer's own
variables (a mixed_float16 run) shift every other one, and two slots of one shape (Adam's
m and v) would land in each other's place unseen if the order ever changed. Here each
variable is named by its role:

  iteration                   the step count of the optimizer that applies the updates
  slot_<i>_<kind>             a slot of the model's i-th trainable variable (momentum,
                              velocity, average, ...), as Keras names it from that variable
  own_<name>                  any other variable of that optimizer
  loss_scale_<name>           a LossScaleOptimizer's own (dynamic_scale, step_counter)

The index i, not the variable's path: Keras numbers layer names per process (dense,
dense_1, ...), so the same model built twice has other paths and the same order. The
learning rate is left out: it comes from the flags, and a resumed run may change it.
"""

import re

import keras

LOSS_SCALE = "loss_scale_"


def named(optimizer: keras.optimizers.Optimizer, trainable: list) -> dict:
    """{name: variable} for every optimizer variable a checkpoint holds."""
    inner = getattr(optimizer, "inner_optimizer", None)
    found: dict = {}
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) and inner is not None:
        ours = {id(v) for v in inner.variables}
        for variable in optimizer.variables:
            if id(variable) not in ours and not _is_rate(variable):
                _add(found, LOSS_SCALE + variable.name, variable)
        optimizer = inner
    # The first index of each reference: a dict, as a model has thousands of variables.
    prefixes: dict = {}
    for i, w in enumerate(trainable):
        prefixes.setdefault(w.path.replace("/", "_") + "_", i)
    for variable in optimizer.variables:
        if _is_rate(variable):
            continue
        plain = variable.name == "iteration"  # Keras's name for its step count
        _add(found, "iteration" if plain else _slot_name(variable.name, prefixes), variable)
    return found


def _slot_name(name: str, prefixes: dict) -> str:
    """The longest reference prefix of `name` (dense_1_kernel_ before dense_1_), tried at each
    underscore from the right."""
    end = len(name) - 1
    while (end := name.rfind("_", 0, end)) >= 0:
        index = prefixes.get(name[: end + 1])
        if index is not None:
            return f"slot_{index}_{name[end + 1 :]}"
    return f"own_{name}"


def _is_rate(variable) -> bool:
    return "learning_rate" in variable.name


def _add(found: dict, name: str, variable) -> None:
    # A checkpoint's names take letters, digits, _ and - as they are.
    key = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    unique, n = key, 1
    while unique in found:  # two references with one sanitized path: kept apart in order
        unique, n = f"{key}_{n}", n + 1
    found[unique] = variable
