"""Running the benchmark: the order of runs, their commands, and real runs."""

import json
import pathlib

import pytest

from tests.support import mnist_manual_dir
from tf_mgpu.tools.benchmarks import runner, startup, variants
from tf_mgpu.tools.benchmarks.variants import Settings, Variant


def named(name: str) -> Variant:
    return next(variant for variant in variants.TABLE if variant.name == name)


def test_rounds_rotate_so_every_variant_takes_every_place_once():
    chosen = [Variant(name, "") for name in "abcd"]
    orders = [[v.name for v in runner.rotated(chosen, r)] for r in range(4)]
    assert orders[1] == ["b", "c", "d", "a"], orders
    for place in range(4):
        assert sorted(order[place] for order in orders) == list("abcd"), orders


def test_commands_run_references_through_bench_and_tf_mgpu_through_main(tmp_path):
    settings = Settings(manual_dir="/m", data_dir="/d", epochs=3, train_split="train[:9]")
    seed = runner.command(variants.TABLE[0], settings, None)
    assert seed[1:4] == ["-m", "tf_mgpu.bench", "--variant=seed_torch"], seed
    assert {"--manual_dir=/m", "--data_dir=/d", "--epochs=3", "--train_split=train[:9]"} <= set(
        seed
    )
    nojit = runner.command(named("tf_mgpu_nojit"), settings, tmp_path)
    assert nojit[1:3] == ["-m", "tf_mgpu.main"], nojit
    assert {"--strategy=mirrored", "--nojit_compile", f"--model_dir={tmp_path}"} <= set(nojit)
    workers = runner.command(variants.mwms_pair(512)[0][0], settings, tmp_path)
    expected = {"--strategy=multi_worker_mirrored", "--startup_timeout=120", "--batch_size=256"}
    assert expected <= set(workers), workers


def test_a_task_of_the_users_own_runs_without_mnists_files(tmp_path):
    own = Settings(manual_dir=None, task="my_task.py")
    for variant in (variants.DEFAULTS, variants.TASK_TABLE[0]):
        argv = runner.command(variant, own, tmp_path)
        assert not [arg for arg in argv if arg.startswith("--manual_dir")], argv


def test_a_variant_naming_its_strategy_runs_with_that_one_alone(tmp_path):
    (_, one), _ = variants.mirroring_one_device_pair()
    argv = runner.command(one, Settings(manual_dir="/m"), tmp_path)
    assert [arg for arg in argv if arg.startswith("--strategy=")] == ["--strategy=one_device"]


def test_a_first_run_finds_the_prepared_data_and_none_of_the_caches(tmp_path):
    shared = tmp_path / "tfds"
    for folder in ("mnist/3.0.1", "downloads/manual", "tf_mgpu_cache/xla-tf"):
        (shared / folder).mkdir(parents=True)
    settings = Settings(manual_dir="/m", data_dir=str(shared))
    fresh = pathlib.Path(runner.first_run_data_dir(settings, tmp_path / "run"))
    assert sorted(entry.name for entry in fresh.iterdir()) == ["downloads", "mnist"]
    assert (fresh / "mnist").resolve() == (shared / "mnist").resolve()  # linked, not copied
    assert fresh.parent == tmp_path / "run"


def test_a_first_run_data_dir_left_by_an_earlier_bench_is_made_anew(tmp_path):
    shared = tmp_path / "tfds"
    (shared / "mnist").mkdir(parents=True)
    settings = Settings(manual_dir="/m", data_dir=str(shared))
    fresh = pathlib.Path(runner.first_run_data_dir(settings, tmp_path / "run"))
    (fresh / "tf_mgpu_cache").mkdir()  # what the first run left
    again = pathlib.Path(runner.first_run_data_dir(settings, tmp_path / "run"))
    assert sorted(entry.name for entry in again.iterdir()) == ["mnist"]
    missing = Settings(manual_dir="/m", data_dir=str(tmp_path / "nothing"))
    with pytest.raises(runner.RunError, match="cannot make a first run's data dir"):
        runner.first_run_data_dir(missing, tmp_path / "other")


def test_the_warm_up_runs_nothing_for_references_first_runs_or_clusters(tmp_path):
    (workers, _), _ = variants.mwms_pair(128)
    skipped = [named("seed_torch"), named("tf_mgpu_cold"), workers]
    assert runner.warm_up(skipped, Settings(manual_dir="/m"), tmp_path) == {}
    assert not tmp_path.joinpath("seed_torch").exists()


def test_probes_alone_run_with_no_variant(tmp_path):
    plan = variants.Plan(variants=[], scaling=[], targets=[], probes=["startup"])
    said = []
    found = runner.measure(plan, Settings(manual_dir="/m"), 1, tmp_path, said.append)
    assert not found.failures, found.failures
    assert sorted(t.probe for t in found.timed) == sorted(p.name for p in startup.PROBES)
    assert said[-1].startswith("round 1/1  startup (s): "), said


def test_a_failed_run_raises_with_its_output(tmp_path):
    settings = Settings(manual_dir=str(mnist_manual_dir()), epochs=1, train_split="validation")
    with pytest.raises(runner.RunError, match="not understood by the seed loop"):
        runner.run_variant(variants.TABLE[0], settings, 0, tmp_path)


@pytest.mark.harness
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
    (workers, _), _ = variants.mwms_pair(128)
    m = runner.run_variant(workers, settings, 1, tmp_path)
    assert (m.variant, m.round) == ("mwms_2x64", 1)
    assert len(m.epoch_seconds) == 2, m
    assert m.steady_examples_per_second > 0, m
    assert m.wall_seconds > sum(m.epoch_seconds), m
    summary = json.loads((tmp_path / "worker_0" / "summary.json").read_text())
    assert (summary["num_workers"], summary["global_batch"]) == (2, 128), summary
    assert not (tmp_path / "worker_1" / "summary.json").exists(), "only the chief writes"
