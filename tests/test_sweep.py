"""`python -m tf_mgpu.sweep` as users run it: a tiny real sweep, and its flag errors."""

import json
import subprocess
import sys

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.tools.scaling import runner as sweeping


def sweep(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tf_mgpu.sweep", *args],
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.harness
def test_a_tiny_sweep_writes_rows_chart_and_errors_as_rows(tmp_path, mnist_data_dir):
    done = sweep(
        f"--output_dir={tmp_path}",
        "--batch_sizes=32,1024",
        "--replicas=1,2",
        "--epochs=1",
        f"--data_dir={mnist_data_dir}",
        f"--manual_dir={support.mnist_manual_dir()}",
        "--train_split=train[:1024]",
        "--test_split=test[:200]",
        "--task=mnist_mlp",
        timeout=240,
    )
    # One run failed: the sweep says so in one line and exits 3, once every row is written.
    assert done.returncode == errors.EXIT_USER_ERROR, done.stderr[-3000:]
    (line,) = support.error_lines(done)
    assert line.startswith("tf_mgpu: error: 1 of 4 sweep runs failed, fixed_w1_r2_b1024 first: ")
    rows = {r["name"]: r for r in sweeping.read_csv(tmp_path / sweeping.CSV)}
    assert list(rows) == [
        "fixed_w1_r1_b32",
        "fixed_w1_r1_b1024",
        "fixed_w1_r2_b32",
        "fixed_w1_r2_b1024",
    ]
    # 2 x 1024 examples per step do not fit in a 1,024-example split: a row, not a crash.
    failed = rows.pop("fixed_w1_r2_b1024")
    assert "fewer than one global batch of 2048" in failed["error"], failed
    assert failed["examples_per_second"] is None
    for name, row in rows.items():
        assert row["error"] is None, (name, row["error"])
        assert row["global_batch"] == row["replicas"] * row["per_replica_batch"], row
        assert row["examples_per_second"] > 0, row
        assert 0 <= row["test_accuracy"] <= 1, row
        assert row["peak_host_memory_mib"] > 100, row
        summary = json.loads((tmp_path / "runs" / name / "summary.json").read_text())
        assert summary["task_name"] == "mnist_mlp", name
    assert rows["fixed_w1_r1_b32"]["scaling_efficiency"] == 1.0
    assert rows["fixed_w1_r2_b32"]["scaling_efficiency"] > 0
    support.assert_png(tmp_path / sweeping.CHART)
    assert "fixed_w1_r2_b32" in done.stdout
    assert "fewer than one global batch" in done.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--lr_modes=fixed,linear"], "--lr_modes takes fixed and/or scaled"),
        (["--lr_modes=scaled", "--scale_lr"], "give --lr_modes or --scale_lr, not both"),
        (["--batch_sizes=32,x"], "--batch_sizes takes positive integers"),
        (["--replicas=0"], "--replicas takes positive integers"),
        (["--batch_size=32"], "Unknown command line flag 'batch_size'. Did you mean: batch_sizes"),
        (["--flagfile=/nonexistent/sweep.cfg"], "--flagfile=/nonexistent/sweep.cfg: cannot open"),
        (["stray"], "unexpected arguments: stray"),
    ],
    ids=["lr_mode", "lr_both", "batch_sizes", "replicas", "typo", "flagfile", "stray"],
)
def test_bad_flags_fail_fast_naming_the_flag(tmp_path, args, named):
    # Before: absl's FATAL and its hint (2 lines), or the module's help, exit 1.
    done = sweep(f"--output_dir={tmp_path / 'out'}", *args, timeout=60)
    assert done.returncode == errors.EXIT_USAGE, done.stderr
    assert_one_line(done, named)
    assert not (tmp_path / "out").exists()


def assert_one_line(done: subprocess.CompletedProcess, named: str) -> None:
    assert done.stderr.startswith("tf_mgpu: error: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert named in done.stderr, done.stderr
    assert done.stdout == "", done.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--manual_dir=/nonexistent"], "--manual_dir=/nonexistent lacks"),
        (["--task=/nonexistent/task.py"], "--task=/nonexistent/task.py: no such file"),
    ],
    ids=["mnist", "task"],
)
def test_inputs_every_run_would_lack_fail_before_any_run(tmp_path, args, named):
    # Before: every run failed the same way, each a row, and the sweep exited 0.
    done = sweep(f"--output_dir={tmp_path / 'out'}", "--replicas=1", *args, timeout=60)
    assert done.returncode == errors.EXIT_USER_ERROR, done.stderr
    assert_one_line(done, named)
    assert not (tmp_path / "out").exists()


def test_a_failed_run_makes_the_sweep_fail_once_its_row_is_written(tmp_path, mnist_data_dir):
    done = sweep(
        f"--output_dir={tmp_path}",
        "--batch_sizes=32",
        "--replicas=1",
        "--epochs=1",
        f"--data_dir={mnist_data_dir}",
        "--train_split=train[:10]",  # fewer examples than one batch: the run fails at once
        timeout=120,
    )
    assert done.returncode == errors.EXIT_USER_ERROR, done.stderr[-3000:]
    lines = support.error_lines(done)
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("tf_mgpu: error: 1 of 1 sweep runs failed, fixed_w1_r1_b32 first:")
    assert "fewer than one global batch of 32" in lines[0], lines
    assert f"{tmp_path / sweeping.CSV}" in lines[0], lines
    (row,) = sweeping.read_csv(tmp_path / sweeping.CSV)
    assert "fewer than one global batch of 32" in row["error"], row
