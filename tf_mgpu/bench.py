"""Benchmarks tf_mgpu against the seed's PyTorch loop, Keras fit and a raw XLA loop.

  python -m tf_mgpu.bench --manual_dir=DIR --data_dir=DIR            # everything: long
  python -m tf_mgpu.bench --manual_dir=DIR --only=seed_torch,tf_mgpu --epochs=3 --rounds=2
  python -m tf_mgpu.bench --manual_dir=DIR --markdown=docs/benchmarks.md   # the page README quotes

Every variant runs in its own fresh process, every round once, in an order
rotated per round; the tables show medians over rounds, ratios to the seed
paired within each round, and the targets. The tables also go to --out as
CSV and JSON, and with --markdown to a Markdown page. `--variant=NAME` runs
one reference loop alone in this process (the benchmark starts its reference
runs that way).
"""

# This is the only module of the benchmark that reads flags.

import pathlib
import shlex
import sys
import tempfile

from absl import app, flags

from tf_mgpu.errors import UserError
from tf_mgpu.tools.bench import baselines, markdown, runner, variants

_MANUAL_DIR = flags.DEFINE_string(
    "manual_dir", None, "Folder holding the four original MNIST .gz files.", required=True
)
_DATA_DIR = flags.DEFINE_string(
    "data_dir", None, "TFDS data dir with MNIST (prepared from --manual_dir if needed)."
)
_EPOCHS = flags.DEFINE_integer(
    "epochs", 10, "Epochs of every run; steady state needs at least 2.", lower_bound=1
)
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Rounds; each runs every variant once.", lower_bound=1)
_OUT = flags.DEFINE_string(
    "out", None, "Where the tables (CSV, JSON) and every run's logs go; default: a new temp dir."
)
_ONLY = flags.DEFINE_list(
    "only",
    [],
    f"Run only these: variants of the table ({', '.join(v.name for v in variants.TABLE)}) "
    "scaling pairs (mirroring, mirroring_nojit, mirroring_1device, mwms_G for G in "
    "--mwms_batches) and probes (startup: --help and user errors; compute: FLOP per example "
    "and the matmul peak). Default: all.",
)
_MWMS_BATCHES = flags.DEFINE_list(
    "mwms_batches",
    [str(batch) for batch in variants.MWMS_BATCHES],
    "Global batches of the multi-worker pairs: 2 workers at G/2 each vs 1 process at G.",
)
_TASK = flags.DEFINE_string(
    "task",
    "mnist_mlp",
    "What tf_mgpu.main trains, as its --task. For mnist_mlp: the seed's PyTorch loop, Keras "
    "fit and the XLA floor as references; for any other task: Keras fit of that task, and "
    "tf_mgpu with --jit_compile auto, forced and off.",
)
_TRAIN_SPLIT = flags.DEFINE_string("train_split", "train", "TFDS split every run trains on.")
_TEST_SPLIT = flags.DEFINE_string("test_split", "test", "TFDS split every run evaluates on.")
_TIMEOUT = flags.DEFINE_float(
    "timeout", 3600.0, "Seconds one run may take before it is killed.", lower_bound=1.0
)
_MARKDOWN = flags.DEFINE_string(
    "markdown",
    None,
    "Also write the report as a Markdown page here (docs/benchmarks.md is the one the "
    "README quotes), with the date, the machine and this command.",
)
_VARIANT = flags.DEFINE_enum(
    "variant",
    None,
    (*baselines.REFERENCES, "compute"),
    "Run this one reference loop here and print its result; compute: count the task's FLOP "
    "per example and measure the machine's matmul peak.",
)


def settings_from_flags() -> variants.Settings:
    return variants.Settings(
        manual_dir=_MANUAL_DIR.value,
        data_dir=_DATA_DIR.value,
        epochs=_EPOCHS.value,
        train_split=_TRAIN_SPLIT.value,
        test_split=_TEST_SPLIT.value,
        timeout=_TIMEOUT.value,
        task=_TASK.value,
    )


def mwms_batches() -> list[int]:
    try:
        return [int(batch) for batch in _MWMS_BATCHES.value]
    except ValueError:
        raise UserError(f"--mwms_batches={','.join(_MWMS_BATCHES.value)}: not integers") from None


def run_reference(settings: variants.Settings) -> None:
    if _VARIANT.value == "compute":
        from tf_mgpu.tools.bench import compute

        result = compute.measure(
            settings.task,
            settings.data_dir,
            settings.manual_dir,
            settings.train_split,
            settings.test_split,
        )
        print(baselines.result_line(result), flush=True)
        return
    result = baselines.run(
        _VARIANT.value,
        manual_dir=settings.manual_dir,
        data_dir=settings.data_dir,
        epochs=settings.epochs,
        train_split=settings.train_split,
        test_split=settings.test_split,
        task=settings.task,
    )
    print(baselines.result_line(result), flush=True)


def run_benchmark(settings: variants.Settings) -> bool:
    """Runs the benchmark; True if every run succeeded."""
    plan = variants.select(_ONLY.value, mwms_batches(), settings.task, runner.bf16_support())
    out = pathlib.Path(_OUT.value or tempfile.mkdtemp(prefix="tf_mgpu_bench_"))
    command = shlex.join(["python", "-m", "tf_mgpu.bench", *sys.argv[1:]])
    report = runner.run(plan, settings, _ROUNDS.value, out, echo=_echo, command=command)
    if _MARKDOWN.value:
        _echo(f"wrote {markdown.write(report, pathlib.Path(_MARKDOWN.value))}")
    return not report["failures"]


def _echo(text: str) -> None:
    print(text, flush=True)


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    settings = settings_from_flags()
    try:
        if _VARIANT.value is not None:
            run_reference(settings)
        elif not run_benchmark(settings):
            sys.exit(1)
    except UserError as e:
        print(f"tf_mgpu.bench: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    app.run(main)
