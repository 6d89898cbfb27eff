"""`python -m tf_mgpu.tools.benchmarks.ab`: two checkouts trained side by side."""

import subprocess
import sys

import pytest

from tests import support


@pytest.mark.harness
def test_the_same_checkout_twice_trains_the_same_weights_at_a_ratio_near_one(mnist_data_dir):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tf_mgpu.tools.benchmarks.ab",
            f"--before={support.ROOT}",
            f"--after={support.ROOT}",
            "--rounds=1",
            "--",
            f"--data_dir={mnist_data_dir}",
            "--train_split=train[:2048]",
            "--test_split=test[:500]",
            "--epochs=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["round 1 before", "round 1 after"]
    summary = lines[-1]
    assert summary.startswith("median steady ex/s: before "), done.stdout
    assert "weights identical" in summary, done.stdout
    ratio = float(summary.split("after/before ")[1].split()[0])
    assert 0.2 < ratio < 5, summary  # the same code; the machine is shared and noisy
