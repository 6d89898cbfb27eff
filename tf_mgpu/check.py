"""Proves, for the user's own model, that N replicas train like one device.

  python -m tf_mgpu.check --task=examples/two_inputs_task.py
  python -m tf_mgpu.check --task=my_task.py --replicas=4 --steps=5 --batch_size=8

Builds the task's model, trains `--steps` steps on one device and on
`--replicas` replicas (GPUs, or logical CPU devices) at the same global
batch, from the same initial weights, with the model's dropout and
augmentation layers off (`tools/equivalence/randomness.py`) and without
XLA on either side, in float64 by default so that rounding cannot pass
for a difference. Prints a short table: whether the weights agree,
and if not, per layer, the first layer whose forward pass differs and the
likely cause; also the step time, parameter count, memory per replica
and the XLA choice `--jit_compile` would make. Exit 0 when equivalent,
4 when not, 3 for a user error (see tf_mgpu/errors.py).
"""

from absl import app, flags

from tf_mgpu import cli, errors, tasks
from tf_mgpu.config import DTYPES, Config

_TASK = flags.DEFINE_string("task", tasks.DEFAULT, "The task to check, as main's --task.")
_REPLICAS = flags.DEFINE_integer(
    "replicas", 2, "Replicas to compare with one device.", lower_bound=2
)
_STEPS = flags.DEFINE_integer(
    "steps",
    5,
    "Training steps on each side: few, so that float rounding cannot grow into a difference "
    "(early SGD amplifies it).",
    lower_bound=1,
)
_BATCH_SIZE = flags.DEFINE_integer(
    "batch_size", 16, "Examples per replica; one device takes this x --replicas.", lower_bound=1
)
_SEED = flags.DEFINE_integer("seed", 0, "Seeds the initial weights and the example order.")
_DTYPE = flags.DEFINE_enum(
    "dtype",
    "float64",
    DTYPES,
    "float64 makes the comparison hold on any CPU; float32 checks the dtype you train in.",
)
_JIT_COMPILE = cli.define_auto_boolean(
    "jit_compile", "auto", "As main's --jit_compile: the XLA choice the table reports."
)
_DATA_DIR = flags.DEFINE_string("data_dir", None, "As main's --data_dir (MNIST tasks).")
_MANUAL_DIR = flags.DEFINE_string("manual_dir", None, "As main's --manual_dir (MNIST tasks).")
_TRAIN_SPLIT = flags.DEFINE_string("train_split", "train", "As main's --train_split.")
_TEST_SPLIT = flags.DEFINE_string("test_split", "test[:1024]", "As main's --test_split.")


def _check() -> None:
    tasks.check(_TASK.value)
    if tasks.uses_mnist(_TASK.value):
        from tf_mgpu.tasks.mnist import preflight

        preflight.data(_DATA_DIR.value, _MANUAL_DIR.value)
    # TensorFlow loads here, after flags parse: --help and flag errors do not wait for it.
    import tensorflow as tf

    from tf_mgpu.engine.distribute import devices
    from tf_mgpu.tools.equivalence import runner

    if not tf.config.list_physical_devices("GPU"):
        devices.split_cpu(_REPLICAS.value)
    config = Config(
        task=_TASK.value,
        batch_size=_BATCH_SIZE.value,
        seed=_SEED.value,
        dtype=_DTYPE.value,
        jit_compile=_JIT_COMPILE.value,
        data_dir=_DATA_DIR.value,
        manual_dir=_MANUAL_DIR.value,
        train_split=_TRAIN_SPLIT.value,
        test_split=_TEST_SPLIT.value,
        model_dir=None,
    )
    outcome = runner.check(config, _REPLICAS.value, _STEPS.value)
    print(outcome.text, flush=True)
    if not outcome.equivalent:
        cli.exit_now(errors.EXIT_NOT_EQUIVALENT)


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    cli.quiet_tensorflow()
    cli.run(_check)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
