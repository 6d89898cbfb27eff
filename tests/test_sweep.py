"""`python -m tf_mgpu.sweep` as users run it: a tiny real sweep, and its flag errors."""

import json
import subprocess
import sys

import pytest

from tests import support
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
    assert done.returncode == 0, done.stderr[-3000:]
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
    ],
    ids=["lr_mode", "lr_both", "batch_sizes", "replicas"],
)
def test_bad_flags_fail_fast_naming_the_flag(tmp_path, args, named):
    done = sweep(f"--output_dir={tmp_path}", *args, timeout=60)
    assert done.returncode != 0
    assert named in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
