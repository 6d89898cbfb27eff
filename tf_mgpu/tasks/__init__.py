"""Tasks: what `--task` names, found without TensorFlow; `tf_mgpu.tasks.adapter` loads them.

A task is a Python file or module that defines, as any Keras user writes them:

  build_model()  returns a compiled Keras model (optimizer, loss, metrics);
                 tf_mgpu calls it inside strategy.scope(), after seeding.
  load_data()    returns (x_train, y_train), (x_test, y_test): NumPy arrays
                 (x may be a dict of arrays, keyed by the model's input
                 names), or a tf.data.Dataset of unbatched (x, y) elements
                 in place of either pair (or one batched for fit, read as
                 its examples), streamed (tf_mgpu.engine.input.stream), never
                 held in memory. A pair of arrays may carry a third,
                 each example's sample_weight. It may take one argument:
                 the run's tf_mgpu.config.Config (data_dir, splits, seed).

Optional: `preprocess(x)`, run on the device inside the compiled step;
`export(model, model_dir)`, to export otherwise; `REFERENCE_BATCH`, the batch
the compiled learning rate was tuned for (`--scale_lr`); `CLASS_WEIGHT`, a
dict {class: weight} applied to the training split as Keras's `class_weight`.

`--task` takes a built-in name (below), a path to a .py file, a dotted
module (`pkg.module`), or `pkg.module:attr` (an object with those
attributes). Nothing here imports TensorFlow.
"""

import importlib.util
import os

from tf_mgpu.errors import UserError

BUILTIN = {
    "mnist_mlp": "tf_mgpu.tasks.mnist_mlp",
    "mnist_cnn": "tf_mgpu.tasks.mnist_cnn",
}
DEFAULT = "mnist_mlp"
CONTRACT = (
    "a task defines build_model(), returning a compiled Keras model, and load_data(), "
    "returning (x_train, y_train), (x_test, y_test)"
)


def is_file(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec


def uses_mnist(spec: str) -> bool:
    """Whether the task is a built-in one that reads MNIST through TFDS."""
    return spec in BUILTIN


def check(spec: str) -> None:
    """UserError, in milliseconds, for a --task that cannot name a task."""
    if spec in BUILTIN:
        return
    if is_file(spec):
        if not os.path.isfile(spec):
            raise UserError(
                f"--task={spec}: no such file; pass a path to a .py file, a module "
                f"(pkg.module), or one of {', '.join(BUILTIN)}"
            )
        return
    module = spec.partition(":")[0]
    if not module or not all(part.isidentifier() for part in module.split(".")):
        raise UserError(
            f"--task={spec} names no task; pass a path to a .py file, a module (pkg.module "
            f"or pkg.module:attr), or one of {', '.join(BUILTIN)}"
        )
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UserError(
            f"--task={spec}: no module named {module!r} on the Python path; pass a path to "
            f"a .py file, or one of {', '.join(BUILTIN)}"
        )
