"""Sweeps per-replica batch x replicas (x workers), one training process per combination.

  python -m tf_mgpu.sweep --batch_sizes=32,64,128,256,512 --replicas=1,2,4 --epochs=2 \\
      --manual_dir=DIR --output_dir=/tmp/sweep
  python -m tf_mgpu.sweep ... --workers=1,2 --lr_modes=fixed,scaled --predict

Replicas are logical CPU devices without GPUs, GPUs where there are. Writes
sweep.csv, sweep.png and runs/<name>/ (each run's --model_dir and logs) into
--output_dir and prints the table. --predict also times the gradient's all-reduce
and prints the scaling model's predictions (see tf_mgpu.tools.scaling.ring_model).
"""

# The only module that reads the sweep's flags; tf_mgpu.tools.scaling.runner and
# tf_mgpu.tools.scaling.ring_model take plain arguments.

import pathlib

from absl import app, flags, logging

from tf_mgpu import cli, tasks
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import preflight as mnist_preflight
from tf_mgpu.tools.scaling import ring_model
from tf_mgpu.tools.scaling import runner as sweeping

_OUTPUT_DIR = flags.DEFINE_string(
    "output_dir", "/tmp/tf_mgpu_sweep", "Where sweep.csv, sweep.png and runs/ go."
)
_BATCH_SIZES = flags.DEFINE_list(
    "batch_sizes", ["32", "64", "128", "256", "512"], "Per-replica batch sizes."
)
_REPLICAS = flags.DEFINE_list(
    "replicas", ["1", "2", "4"], "Replica counts of one process (logical CPUs or GPUs)."
)
_WORKERS = flags.DEFINE_list(
    "workers",
    ["1"],
    "Worker process counts: 1 runs every --replicas count in one process; W > 1 runs W "
    "multi_worker_mirrored processes on loopback, one replica each.",
)
_EPOCHS = flags.DEFINE_integer(
    "epochs",
    2,
    "Epochs per run. Examples/s counts epochs after the first, which includes tracing "
    "and compiling, so 2 or more give steady figures.",
    lower_bound=1,
)
_LR_MODES = flags.DEFINE_list(
    "lr_modes",
    None,
    "Learning-rate modes to sweep, each a line style in the chart: 'fixed' keeps "
    "--learning_rate; 'scaled' runs main with --scale_lr. Default: as --scale_lr says.",
)
_SCALE_LR = flags.DEFINE_bool(
    "scale_lr",
    False,
    "Every run applies the linear scaling rule with warmup (Goyal et al. 2017): learning "
    "rate x global batch / 64. Same as --lr_modes=scaled.",
)
_WARMUP_EPOCHS = flags.DEFINE_float(
    "warmup_epochs",
    0.5,
    "With the scaled learning rate: epochs of linear warmup from the unscaled rate. Goyal "
    "et al. warm up for 5 of 90 epochs; these runs are a few epochs long.",
    lower_bound=0.0,
)
_LEARNING_RATE = flags.DEFINE_float(
    "learning_rate", None, "Passed to every run; default: tf_mgpu.main's."
)
_TASK = flags.DEFINE_string(
    "task",
    None,
    "Passed to every run: what to train, as tf_mgpu.main's --task (default: mnist_mlp).",
)
_DATA_DIR = flags.DEFINE_string("data_dir", None, "Passed to every run.")
_MANUAL_DIR = flags.DEFINE_string("manual_dir", None, "Passed to every run.")
_TRAIN_SPLIT = flags.DEFINE_string("train_split", None, "Passed to every run.")
_TEST_SPLIT = flags.DEFINE_string("test_split", None, "Passed to every run.")
_RUN_TIMEOUT = flags.DEFINE_float(
    "run_timeout", 1800.0, "Seconds before a run (all its processes) is killed.", lower_bound=1.0
)
_STARTUP_TIMEOUT = flags.DEFINE_float(
    "startup_timeout", 120.0, "Seconds a worker waits for its peers.", lower_bound=1.0
)
_PREDICT = flags.DEFINE_bool(
    "predict",
    False,
    "After the sweep, time the gradient's all-reduce (2 replicas in one process; 2 loopback "
    "workers) and print the scaling model's predictions for GPUs and hosts.",
)
_MEASURE_ALLREDUCE = flags.DEFINE_enum(
    "measure_allreduce",
    None,
    tuple(ring_model.MEASURED),
    "Child mode, run by --predict: time the all-reduce under this strategy, print one line "
    "and exit (multi_worker_mirrored: one of 2 TF_CONFIG workers).",
)
_ALLREDUCE_CALLS = flags.DEFINE_integer(
    "allreduce_calls", 30, "Timed calls per all-reduce measurement.", lower_bound=1
)
_ALLREDUCE_PER_CALL = flags.DEFINE_integer(
    "allreduce_per_call", 10, "Chained all-reduces per timed call.", lower_bound=1
)

flags.register_validator(
    "lr_modes",
    lambda modes: modes is None or (modes and set(modes) <= set(sweeping.LR_MODES)),
    message=f"--lr_modes takes {' and/or '.join(sweeping.LR_MODES)}, comma-separated",
)
flags.register_multi_flags_validator(
    ["lr_modes", "scale_lr"],
    lambda values: not (values["lr_modes"] and values["scale_lr"]),
    message="give --lr_modes or --scale_lr, not both",
)


def _ints(name: str, values: list[str]) -> list[int]:
    numbers = [int(v) for v in values if v.isdigit()]
    if len(numbers) < len(values) or not numbers or min(numbers) < 1:
        cli.usage_error(f"--{name} takes positive integers, got {','.join(values)}")
    return numbers


def check_inputs() -> None:
    """Before any run, in a second: the --task names a task and MNIST can be had for a
    built-in one; otherwise every run would fail the same way (UserError, one line)."""
    task = _TASK.value or tasks.DEFAULT
    tasks.check(task)
    if tasks.uses_mnist(task):
        mnist_preflight.data(_DATA_DIR.value, _MANUAL_DIR.value)


def _main_flags() -> tuple[str, ...]:
    passed = (_TASK, _LEARNING_RATE, _DATA_DIR, _MANUAL_DIR, _TRAIN_SPLIT, _TEST_SPLIT)
    return tuple(f"--{h.name}={h.value}" for h in passed if h.value is not None)


def _runner(out_dir: pathlib.Path) -> sweeping.Runner:
    return sweeping.Runner(
        out_dir=out_dir,
        epochs=_EPOCHS.value,
        main_flags=_main_flags(),
        warmup_epochs=_WARMUP_EPOCHS.value,
        gpus=sweeping.local_gpus(),
        timeout=_RUN_TIMEOUT.value,
        startup_timeout=_STARTUP_TIMEOUT.value,
    )


def points_from_flags() -> list[sweeping.Point]:
    """Every point of the sweep, from the flags; exit 2 in one line for a bad list."""
    modes = _LR_MODES.value or (["scaled"] if _SCALE_LR.value else ["fixed"])
    return sweeping.points(
        _ints("batch_sizes", _BATCH_SIZES.value),
        _ints("replicas", _REPLICAS.value),
        _ints("workers", _WORKERS.value),
        modes,
    )


def run_sweep(runner: sweeping.Runner, todo: list[sweeping.Point]) -> list[dict]:
    """Runs every point, prints the table, writes the CSV and chart."""
    rows = []
    for i, point in enumerate(todo, 1):
        print(f"sweep {i}/{len(todo)}: {point.name}", flush=True)
        rows.append(runner.run(point))
    sweeping.add_efficiency(rows)
    sweeping.write_csv(rows, runner.out_dir / sweeping.CSV)
    split = _TRAIN_SPLIT.value or "train"
    title = f"tf_mgpu sweep: {runner.epochs} epoch(s) on {split}, {runner.gpus or 'no'} GPUs"
    sweeping.chart(rows, runner.out_dir / sweeping.CHART, title)
    print(sweeping.table(rows))
    print(f"wrote {runner.out_dir / sweeping.CSV} and {runner.out_dir / sweeping.CHART}")
    return rows


def predict(runner: sweeping.Runner, rows: list[dict]) -> None:
    """Measures the all-reduce, then prints the model's predictions beside the measured rows."""
    measured = runner.measure_allreduce(_ALLREDUCE_CALLS.value, _ALLREDUCE_PER_CALL.value)
    for kind, result in measured.items():
        print(
            f"measured all-reduce, {ring_model.MEASURED[kind]}: "
            f"{result['median_seconds'] * 1e3:.3f} ms, median of {result['calls']} calls"
        )
    settings = ring_model.assumed_settings()
    try:
        compute = sweeping.compute_from_rows(rows)
    except ValueError as e:
        compute = None
        print(f"no prediction for this machine: {e}")
    else:
        seconds = {kind: result["median_seconds"] for kind, result in measured.items()}
        settings = ring_model.measured_settings(compute, seconds) + settings
    batches = sorted({r["per_replica_batch"] for r in rows})
    predictions = [p for s in settings for p in ring_model.predict(s, batches)]
    sweeping.write_predictions(predictions, runner.out_dir / sweeping.PREDICTIONS)
    print("\nassumptions:\n" + ring_model.assumptions_text(compute))
    print("\npredicted:\n" + ring_model.prediction_table(predictions))
    print("\nbreak-even per-replica batch (efficiency >= 50% from here up):")
    print(ring_model.break_even_table(ring_model.break_even_rows(settings)))
    print("\nmeasured here vs predicted:\n" + sweeping.comparison(rows, predictions))


def failed(rows: list[dict], out_dir: pathlib.Path) -> None:
    """UserError (exit 3) naming the runs that failed, once every row is written."""
    bad = [r for r in rows if r["error"] is not None]
    if bad:
        raise UserError(
            f"{len(bad)} of {len(rows)} sweep runs failed, {bad[0]['name']} first: "
            f"{bad[0]['error']}; every run's error is in {out_dir / sweeping.CSV}, its logs "
            f"in {out_dir / 'runs'}"
        )


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    if _MEASURE_ALLREDUCE.value:
        if not flags.FLAGS["verbosity"].present:
            # TensorFlow logs every traced collective at INFO; --verbosity=0 shows them.
            logging.set_verbosity(logging.WARNING)
        line = ring_model.measure_allreduce(
            _MEASURE_ALLREDUCE.value,
            calls=_ALLREDUCE_CALLS.value,
            per_call=_ALLREDUCE_PER_CALL.value,
        )
        print(line, flush=True)
        return
    points = points_from_flags()
    cli.run(lambda: _sweep(points))


def _sweep(points: list[sweeping.Point]) -> None:
    check_inputs()
    runner = _runner(pathlib.Path(_OUTPUT_DIR.value))
    runner.out_dir.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(runner, points)
    if _PREDICT.value:
        predict(runner, rows)
    failed(rows, runner.out_dir)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
