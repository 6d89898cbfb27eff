"""Benchmarks tf_mgpu against the seed's PyTorch loop, Keras fit and a raw XLA loop.

  python -m tf_mgpu.bench --manual_dir=DIR --data_dir=DIR            # everything: long
  python -m tf_mgpu.bench --manual_dir=DIR --only=seed_torch,tf_mgpu --epochs=3 --rounds=2
  python -m tf_mgpu.bench --manual_dir=DIR --markdown=docs/benchmarks.md   # the page README quotes
  python -m tf_mgpu.bench --input=DIR   # the input at scale, on tf_mgpu.tools.synthetic's DIR
  python -m tf_mgpu.bench --task=my_task.py   # your task against Keras fit (no MNIST needed)

Every variant runs in its own fresh process, every round once, in an order
rotated per round; the tables show medians over rounds, ratios to the seed
paired within each round, and the targets. The tables also go to --out as
CSV and JSON, and with --markdown to a Markdown page. `--variant=NAME` runs
one reference loop alone in this process (the benchmark starts its reference
runs that way). `--input=DIR` measures the input instead (issue 23): see
`tf_mgpu.tools.benchmarks.input_measure`.
"""

# This is the only module of the benchmark that reads flags.

import pathlib
import shlex
import sys
import tempfile

from absl import app, flags

from tf_mgpu import cli, errors, tasks
from tf_mgpu.errors import UserError
from tf_mgpu.tools.benchmarks import (
    baselines,
    input_measure,
    input_report,
    markdown,
    runner,
    variants,
)

_MANUAL_DIR = flags.DEFINE_string(
    "manual_dir",
    None,
    "Folder holding the four original MNIST .gz files: needed for a built-in task (the seed's "
    "PyTorch loop reads them), not for a task of your own nor with --input.",
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
_INPUT = flags.DEFINE_string(
    "input",
    None,
    "Measure the input at scale instead: a folder written by `python -m "
    "tf_mgpu.tools.synthetic --out=DIR`, whose full/ is compared with its subset/ (time to "
    "the first step, resume latency at 10% and 90% of an epoch, input alone vs training "
    "examples/s, bytes read per worker at 1 and 2 workers); --out gets input.md and input.json.",
)
_INPUT_BATCH = flags.DEFINE_integer(
    "input_batch", 64, "With --input: the global batch (2 workers take half each).", lower_bound=2
)
_INPUT_FORMATS = flags.DEFINE_list(
    "input_formats", list(input_measure.FORMATS), "With --input: the formats to measure."
)
_INPUT_SECONDS = flags.DEFINE_float(
    "input_seconds", 20.0, "With --input: seconds the input alone is timed.", lower_bound=0.1
)
_INPUT_JOBS = flags.DEFINE_integer(
    "input_jobs",
    1,
    "With --input: runs at once. 1 for figures; more only checks the harness faster.",
    lower_bound=1,
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
        from tf_mgpu.tools.benchmarks import compute

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


def run_input() -> bool:
    """Measures the input at scale; True if every run succeeded."""
    unknown = sorted(set(_INPUT_FORMATS.value) - set(input_measure.FORMATS))
    if unknown:
        raise UserError(f"--input_formats: {', '.join(unknown)}; take {input_measure.FORMATS}")
    if _INPUT_BATCH.value % 2:
        raise UserError(f"--input_batch={_INPUT_BATCH.value}: give an even number (2 workers)")
    out = pathlib.Path(_OUT.value or tempfile.mkdtemp(prefix="tf_mgpu_bench_input_"))
    settings = input_measure.Settings(
        data=pathlib.Path(_INPUT.value).resolve(),
        out=out / "runs",
        batch=_INPUT_BATCH.value,
        formats=tuple(_INPUT_FORMATS.value),
        probe_seconds=_INPUT_SECONDS.value,
        timeout=_TIMEOUT.value,
        jobs=_INPUT_JOBS.value,
    )
    try:
        input_measure.check(settings)
    except input_measure.RunError as e:
        raise UserError(str(e)) from None
    env = runner.environment()
    _echo(f"tf_mgpu input benchmark: {settings.data}, logs in {settings.out}")
    results, failures = input_measure.measure(settings, _echo)
    report = input_report.build(settings, env, results, failures)
    _echo(input_report.markdown(report))
    _echo(f"wrote {', '.join(str(path) for path in input_report.write(report, out))}")
    if _MARKDOWN.value:  # the page docs/data.md quotes, as bench wrote it
        page = pathlib.Path(_MARKDOWN.value)
        command = shlex.join(["python", "-m", "tf_mgpu.bench", *sys.argv[1:]])
        page.write_text(
            f"<!-- Written by `{command}`; never edited by hand. -->\n\n"
            + input_report.markdown(report)
            + "\n"
        )
        _echo(f"wrote {page}")
    return not failures


def _echo(text: str) -> None:
    print(text, flush=True)


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    if _INPUT.value is None:
        check_task()
    settings = settings_from_flags()
    try:
        if _INPUT.value is not None:
            if not run_input():
                sys.exit(1)
        elif _VARIANT.value is not None:
            run_reference(settings)
        elif not run_benchmark(settings):
            sys.exit(1)
    except UserError as e:  # a flag's value: --only, --mwms_batches, --input's
        print(f"tf_mgpu: error: {e}", file=sys.stderr)
        sys.exit(errors.EXIT_USAGE)


def check_task() -> None:
    """One line before anything runs: a --task that names no task (exit 3), or MNIST's
    recipe without --manual_dir (exit 2), which the seed's PyTorch loop reads."""
    try:
        tasks.check(_TASK.value)
    except UserError as e:
        print(errors.line(e), file=sys.stderr)
        sys.exit(e.exit_code)
    if tasks.uses_mnist(_TASK.value) and _MANUAL_DIR.value is None:
        cli.usage_error(
            f"--task={_TASK.value} needs --manual_dir, the folder holding the four original "
            f"MNIST .gz files (the seed's PyTorch loop reads them); a task of your own needs none"
        )


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
