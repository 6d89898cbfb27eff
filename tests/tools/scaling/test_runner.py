"""The sweep's pieces: points, rows, efficiency, CSV, table, chart, and real runs."""

import json

import pytest

from tests import support
from tf_mgpu.cluster import local
from tf_mgpu.tools.scaling import ring_model
from tf_mgpu.tools.scaling import runner as sweeping


def summary(replicas: int, batch: int, examples_per_second: float, accuracy: float) -> dict:
    """A summary.json with the keys the sweep reads (two epochs)."""
    epoch = {"epoch": 2, "seconds": 1.5, "train_examples": 1000, "test_accuracy": accuracy}
    return {
        "history": [{**epoch, "epoch": 1, "seconds": 4.0}, epoch],
        "steady_examples_per_second": examples_per_second,
        "first_epoch_seconds": 4.0,
        "test_accuracy": accuracy,
        "peak_host_memory_mib": 700.0,
        "replicas": replicas,
        "per_replica_batch": batch,
        "global_batch": replicas * batch,
        "num_workers": 1,
        "steps_per_epoch": 10,
        "learning_rate": 0.01,
    }


def test_points_cover_replicas_of_one_process_and_one_replica_per_worker():
    names = [p.name for p in sweeping.points([32, 64], [1, 2], [1, 2], ["fixed", "scaled"])]
    assert names == [
        f"{mode}_w{w}_r{r}_b{b}"
        for mode in ("fixed", "scaled")
        for w, r in ((1, 1), (1, 2), (2, 2))
        for b in (32, 64)
    ]
    only_workers = sweeping.points([64], [1, 4], [2], ["fixed"])
    assert [(p.workers, p.replicas, p.global_batch) for p in only_workers] == [(2, 2, 128)]


def test_rows_take_steady_figures_and_efficiency_is_against_one_replica():
    one = sweeping.Point("fixed", 1, 1, 64)
    two = sweeping.Point("fixed", 1, 2, 64)
    workers = sweeping.Point("fixed", 2, 2, 64)
    rows = [
        sweeping.row(one, summary=summary(1, 64, 1000.0, 0.9)),
        sweeping.row(two, summary=summary(2, 64, 1500.0, 0.9)),
        sweeping.row(workers, summary=summary(2, 64, 500.0, 0.9)),
        sweeping.row(sweeping.Point("fixed", 1, 4, 64), error="main: tf_mgpu: error: boom"),
    ]
    sweeping.add_efficiency(rows)
    assert [r["scaling_efficiency"] for r in rows] == [1.0, 0.75, 0.25, None]
    assert rows[1]["epoch_seconds"] == 1.5, "the first epoch (tracing) is not steady"
    assert rows[1]["first_epoch_seconds"] == 4.0
    assert rows[3]["examples_per_second"] is None
    text = sweeping.table(rows)
    assert "75%" in text
    assert text.splitlines()[-1].endswith("main: tf_mgpu: error: boom"), text


def test_a_run_with_other_replicas_than_asked_is_an_error():
    got = sweeping.row(sweeping.Point("fixed", 1, 2, 64), summary=summary(1, 64, 1.0, 0.5))
    assert got["error"] == "ran with 1 replicas, not 2"


def test_csv_round_trips(tmp_path):
    rows = [
        sweeping.row(sweeping.Point("scaled", 1, 1, 32), summary=summary(1, 32, 800.0, 0.8)),
        sweeping.row(sweeping.Point("scaled", 1, 2, 32), error="boom, with a comma"),
    ]
    sweeping.write_csv(rows, tmp_path / "s.csv")
    assert sweeping.read_csv(tmp_path / "s.csv") == rows


def test_failure_message_prefers_mains_own_error_line():
    finished = local.Finished(
        "main", 2, "", "noise\ntf_mgpu: error: --train_split has 10 examples\n", 3.0
    )
    assert sweeping.failure_message(finished, 60) == (
        "main: tf_mgpu: error: --train_split has 10 examples"
    )
    killed = local.Finished("worker:1", -9, "", "", 60.2)
    assert "killed after 60 s" in sweeping.failure_message(killed, 60)


def test_compute_is_fitted_to_one_replica_rows_only():
    rows = [
        sweeping.row(
            sweeping.Point("fixed", 1, 1, b), summary=summary(1, b, b / (1e-3 + b * 1e-5), 0.9)
        )
        for b in (32, 64, 128)
    ]
    rows.append(sweeping.row(sweeping.Point("fixed", 1, 2, 64), summary=summary(2, 64, 1.0, 0.9)))
    compute = sweeping.compute_from_rows(rows)
    assert compute.step_overhead == pytest.approx(1e-3)
    assert compute.per_example == pytest.approx(1e-5)


def test_chart_is_a_png_even_with_failed_rows(tmp_path):
    rows = [
        sweeping.row(sweeping.Point(mode, 1, r, b), summary=summary(r, b, 1000.0 * r, 0.9))
        for mode in sweeping.LR_MODES
        for r in (1, 2)
        for b in (32, 64)
    ]
    rows.append(sweeping.row(sweeping.Point("fixed", 1, 4, 32), error="boom"))
    sweeping.chart(rows, tmp_path / "c.png", "test")
    support.assert_png(tmp_path / "c.png")


@pytest.mark.harness
@pytest.mark.cluster
def test_two_workers_run_as_one_point_and_the_allreduce_is_measured(tmp_path, mnist_data_dir):
    runner = sweeping.Runner(
        out_dir=tmp_path,
        epochs=1,
        main_flags=(
            f"--data_dir={mnist_data_dir}",
            f"--manual_dir={support.mnist_manual_dir()}",
            "--train_split=train[:1024]",
            "--test_split=test[:200]",
        ),
        timeout=240,
    )
    got = runner.run(sweeping.Point("fixed", 2, 2, 64))
    logs = "\n".join(p.read_text()[-2000:] for p in (tmp_path / "runs").rglob("*.err"))
    assert got["error"] is None, logs
    assert (got["workers"], got["replicas"], got["global_batch"]) == (2, 2, 128)
    assert got["test_accuracy"] > 0.1, got
    assert not (tmp_path / "runs" / got["name"] / "worker1").exists(), "only the chief writes"
    measured = runner.measure_allreduce(calls=3, per_call=2)
    assert set(measured) == set(ring_model.MEASURED), measured
    assert json.loads((tmp_path / sweeping.ALLREDUCE).read_text()) == measured
    for result in measured.values():
        assert (result["replicas"], result["bytes"]) == (2, ring_model.GRADIENT_BYTES), result
