"""The benchmark library: what runs, in which order, how figures pair up, and real runs."""

import dataclasses
import json
import re

import pytest

from tests.support import mnist_manual_dir
from tf_mgpu.errors import UserError
from tf_mgpu.tools.bench import runner as benchmark
from tf_mgpu.tools.bench.runner import Comparison, Measurement, Settings, Variant

TABLE_NAMES = [variant.name for variant in benchmark.TABLE]


def fake(variant: str, round_index: int, steady: float | None, **figures) -> Measurement:
    values = {
        "first_epoch_seconds": 2.0,
        "wall_seconds": 10.0,
        "test_accuracy": 0.9,
        "peak_memory_mib": 500.0,
        **figures,
    }
    return Measurement(variant, round_index, steady, epoch_seconds=[1.0], **values)


def test_everything_runs_by_default_with_shared_references_once():
    variants, scaling, targets = benchmark.select(None, [128, 512, 2048])
    names = [variant.name for variant in variants]
    assert names[: len(TABLE_NAMES)] == TABLE_NAMES, names
    assert len(names) == len(set(names)), f"a variant runs twice per round: {names}"
    assert {"mirrored_2x64", "single_128", "mwms_2x64", "mwms_2x256", "single_2048"} <= set(names)
    expected = ["single_128", "single_128_nojit", "single_128", "single_512", "single_2048"]
    assert [pair.b for pair in scaling] == expected
    bounds = {(t.a, t.b, t.figure): (t.op, t.bound) for t in targets}
    assert bounds == {
        ("tf_mgpu", "seed_torch", "steady_examples_per_second"): (">=", 3.0),
        ("tf_mgpu", "keras_fit", "steady_examples_per_second"): (">=", 7.0),
        ("tf_mgpu", "seed_torch", "wall_seconds"): ("<=", 0.7),
        ("tf_mgpu", "tf_mgpu_all_off", "test_accuracy"): ("±", 0.5),
        ("tf_mgpu", "seed_torch", "test_accuracy"): ("±", None),
        ("mirrored_2x64", "single_128", "steady_examples_per_second"): (">=", 0.8),
        ("mwms_2x256", "single_512", "steady_examples_per_second"): (">=", 0.5),
    }


def test_only_selects_variants_and_pairs_with_the_targets_they_can_answer():
    variants, scaling, targets = benchmark.select(["seed_torch", "tf_mgpu", "mirroring"], [])
    assert [v.name for v in variants] == ["seed_torch", "tf_mgpu", "mirrored_2x64", "single_128"]
    assert [pair.a for pair in scaling] == ["mirrored_2x64"]
    assert "keras_fit" not in {t.b for t in targets}, targets
    assert len(targets) == 4, targets


def test_another_task_runs_keras_fit_of_it_and_three_xla_choices_and_passes_the_task(tmp_path):
    variants, _, targets = benchmark.select(None, [], task="examples/convnet_task.py")
    names = [variant.name for variant in variants]
    assert names[:4] == ["keras_fit_task", "tf_mgpu", "tf_mgpu_jit", "tf_mgpu_nojit"], names
    assert not set(names) & {"seed_torch", "keras_fit", "xla_floor"}, names
    assert {(t.label, t.op, t.bound) for t in targets} >= {
        ("steady ex/s, tf_mgpu / keras_fit_task", ">=", 1.8),
        ("end-to-end wall, tf_mgpu / keras_fit_task", "<=", 0.65),
        ("steady ex/s, auto / XLA forced", ">=", 0.9),
        ("steady ex/s, auto / no XLA", ">=", 0.9),
    }
    settings = benchmark.Settings(manual_dir="/m", task="examples/convnet_task.py")
    for variant in variants:
        command = benchmark.command(variant, settings, tmp_path)
        assert "--task=examples/convnet_task.py" in command, command
        if variant.main_args is not None:  # never a resume of an earlier bench's run
            assert "--clean" in command, command


@pytest.mark.parametrize(
    ("only", "batches", "message"),
    [(["tf_mgpu", "nope"], [], "unknown nope"), (None, [100, 33], "33 is not an even")],
)
def test_bad_selections_are_user_errors_naming_the_value(only, batches, message):
    with pytest.raises(UserError, match=message):
        benchmark.select(only, batches)


def test_rounds_rotate_so_every_variant_takes_every_place_once():
    variants = [Variant(name, "") for name in "abcd"]
    orders = [[v.name for v in benchmark.rotated(variants, r)] for r in range(4)]
    assert orders[1] == ["b", "c", "d", "a"], orders
    for place in range(4):
        assert sorted(order[place] for order in orders) == list("abcd"), orders


def test_commands_run_references_through_bench_and_tf_mgpu_through_main(tmp_path):
    settings = Settings(manual_dir="/m", data_dir="/d", epochs=3, train_split="train[:9]")
    seed = benchmark.command(benchmark.TABLE[0], settings, None)
    assert seed[1:4] == ["-m", "tf_mgpu.bench", "--variant=seed_torch"], seed
    assert {"--manual_dir=/m", "--data_dir=/d", "--epochs=3", "--train_split=train[:9]"} <= set(
        seed
    )
    nojit = benchmark.command(benchmark.TABLE[3], settings, tmp_path)
    assert nojit[1:3] == ["-m", "tf_mgpu.main"], nojit
    assert {"--strategy=mirrored", "--nojit_compile", f"--model_dir={tmp_path}"} <= set(nojit)
    workers = benchmark.command(benchmark.mwms_pair(512)[0][0], settings, tmp_path)
    expected = {"--strategy=multi_worker_mirrored", "--startup_timeout=120", "--batch_size=256"}
    assert expected <= set(workers), workers


def test_steady_state_counts_every_epoch_after_the_first():
    m = benchmark.measurement("x", 0, [5.0, 1.0, 3.0], [100, 100, 100], 0.9, 300.0, 12.0)
    assert m.steady_examples_per_second == pytest.approx(50.0)
    assert m.first_epoch_seconds == 5.0
    one = benchmark.measurement("x", 0, [5.0], [100], 0.9, 300.0, 12.0)
    assert one.steady_examples_per_second is None


def test_ratios_pair_runs_of_the_same_round():
    # The machine slows down in round 1. Paired per round, the ratios are
    # 2, 2 and 2.5, median 2; the ratio of the medians would say 150 / 60 = 2.5.
    steady = {"seed_torch": (100.0, 20.0, 60.0), "fast": (200.0, 40.0, 150.0)}
    measurements = [
        fake(name, round_index, value)
        for name, values in steady.items()
        for round_index, value in enumerate(values)
    ]
    figure = "steady_examples_per_second"
    assert benchmark.paired(measurements, "fast", "seed_torch", figure) == 2.0
    assert benchmark.median(measurements, "fast", figure) == 150.0
    assert benchmark.median(measurements, "seed_torch", figure) == 60.0


def test_targets_pass_miss_or_say_not_measured():
    measurements = [
        fake("a", 0, 90.0, test_accuracy=0.946),
        fake("b", 0, 100.0, test_accuracy=0.95),
    ]
    floor = Comparison("a / b", "a", "b", "steady_examples_per_second", ">=", 0.8)
    ceiling = dataclasses.replace(floor, op="<=")
    points = Comparison("a - b", "a", "b", "test_accuracy", "±", 0.5)
    missing = dataclasses.replace(floor, b="c")
    report_only = dataclasses.replace(floor, op=None, bound=None)
    assert benchmark.evaluate(floor, measurements)["result"] == "PASS"
    assert benchmark.evaluate(ceiling, measurements)["result"] == "MISS"
    assert benchmark.evaluate(points, measurements)["value"] == pytest.approx(-0.4)
    assert benchmark.evaluate(points, measurements)["result"] == "PASS"
    assert benchmark.evaluate(missing, measurements)["result"] == "n/a"
    assert benchmark.evaluate(report_only, measurements)["result"] == ""


def test_report_prints_and_writes_every_table(tmp_path):
    measurements = [fake("seed_torch", 0, 100.0), fake("tf_mgpu", 0, 400.0, wall_seconds=5.0)]
    variants = [benchmark.TABLE[0], benchmark.TABLE[2]]
    report = {
        "table": benchmark.table_rows(variants, measurements),
        "scaling": [],
        "targets": [benchmark.evaluate(t, measurements) for t in benchmark.TARGETS],
        "failures": [{"variant": "keras_fit", "round": 0, "log": "boom"}],
    }
    text = benchmark.format_report(report)
    squeezed = re.sub(" +", " ", text)  # the columns' padding is not the point here
    assert "tf_mgpu 400 4.00x 2.00 1.00x 5.0 0.50x" in squeezed, text
    assert "steady ex/s, tf_mgpu / seed_torch 4.00x >= 3x PASS" in squeezed, text
    assert "steady ex/s, tf_mgpu / keras_fit n/a >= 7x n/a" in squeezed, text
    assert "test accuracy, tf_mgpu - tf_mgpu_all_off n/a pt ± 0.5 pt n/a" in squeezed, text
    assert "test accuracy, tf_mgpu - seed_torch +0.00 pt\n" in squeezed, text
    assert "FAILED runs, left out of the figures: keras_fit (round 1)" in text, text
    paths = benchmark.write(report, tmp_path)
    assert sorted(p.name for p in paths) == ["bench.json", "table.csv", "targets.csv"], paths
    table = (tmp_path / "table.csv").read_text().splitlines()
    assert table[0].startswith("variant,description,runs,steady_examples_per_second,"), table
    assert json.loads((tmp_path / "bench.json").read_text())["table"][1]["variant"] == "tf_mgpu"


def test_a_failed_run_raises_with_its_output(tmp_path):
    settings = Settings(manual_dir=str(mnist_manual_dir()), epochs=1, train_split="validation")
    with pytest.raises(benchmark.RunError, match="not understood by the seed loop"):
        benchmark.run_variant(benchmark.TABLE[0], settings, 0, tmp_path)


@pytest.mark.cluster
def test_two_workers_run_as_one_measurement_read_from_the_chief(tmp_path, mnist_data_dir):
    settings = Settings(
        manual_dir=str(mnist_manual_dir()),
        data_dir=mnist_data_dir,
        epochs=2,
        train_split="train[:2048]",
        test_split="test[:500]",
        timeout=180,
    )
    (workers, _), _ = benchmark.mwms_pair(128)
    m = benchmark.run_variant(workers, settings, 1, tmp_path)
    assert (m.variant, m.round) == ("mwms_2x64", 1)
    assert len(m.epoch_seconds) == 2, m
    assert m.steady_examples_per_second > 0, m
    assert m.wall_seconds > sum(m.epoch_seconds), m
    summary = json.loads((tmp_path / "worker_0" / "summary.json").read_text())
    assert (summary["num_workers"], summary["global_batch"]) == (2, 128), summary
    assert not (tmp_path / "worker_1" / "summary.json").exists(), "only the chief writes"
