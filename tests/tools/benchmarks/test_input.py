"""`bench --input` end to end on a tiny synthetic dataset: every figure of both formats,
from real processes; and the report's verdicts. Not the targets: timing a few MB on a
shared machine says nothing."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.support import ROOT, environment
from tf_mgpu.tools import synthetic
from tf_mgpu.tools.benchmarks import input_report

BATCH = 16


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """full/: 1,398 training images of 32x32x3 (4 MiB, 87 steps of 16), subset/: 320."""
    out = tmp_path_factory.mktemp("synthetic")
    synthetic.main([f"--out={out}", "--gigabytes=0.004", "--image_size=32", "--min_subset=320"])
    return out


def test_the_dataset_is_the_same_examples_in_both_formats_and_learnable(tiny):
    import tensorflow as tf

    meta = json.loads((tiny / "full" / "meta.json").read_text())
    assert (meta["train"], meta["test"], meta["shape"]) == (1398, 256, [32, 32, 3])
    images = np.load(tiny / "full" / "images.npy", mmap_mode="r")
    labels = np.load(tiny / "full" / "labels.npy", mmap_mode="r")
    assert (images.shape, images.dtype) == ((1398 + 256, 32, 32, 3), np.uint8)
    first = tiny / "full" / meta["shards"]["train"][0]
    record = next(iter(tf.data.TFRecordDataset(str(first))))
    parsed = tf.train.Example.FromString(record.numpy()).features.feature
    assert parsed["image"].bytes_list.value[0] == images[0].tobytes()
    assert parsed["label"].int64_list.value[0] == labels[0]
    # Each class has its own pattern: the class means differ far beyond the noise.
    means = [images[:1398][labels[:1398] == c].mean(0) for c in range(2)]
    assert np.abs(means[0] - means[1]).mean() > 20


@pytest.mark.harness
@pytest.mark.cluster
def test_the_harness_measures_every_figure_of_both_formats(tiny, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tf_mgpu.bench",
            f"--input={tiny}",
            f"--input_batch={BATCH}",
            "--input_seconds=1",
            "--input_jobs=4",  # the figures only need to exist: run the units at once
            f"--out={tmp_path}",
        ],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "input.json").read_text())
    assert report["failures"] == []
    for fmt in ("memmap", "tfrecord"):
        rows = report["formats"][fmt]
        assert len(rows) == 7, rows
        for row in rows:
            assert row["full"] is not None, (fmt, row)
        for row in rows[:3]:  # timed against the subset
            assert min(row["subset"], row["ratio"]) > 0, (fmt, row)
        assert min(rows[3]["ratio"], rows[4]["full"]) > 0  # input alone / training
        assert len(rows[6]["full"]) == 2  # each of 2 workers
        # A ratio to 1 worker, unless that read nothing between its checkpoints: the whole
        # tiny stream fits in tf_mgpu's shuffle buffer, read before the first one.
        assert (rows[6]["ratio"] is None) == (rows[5]["full"] == 0), rows
        assert all(row["result"] in ("PASS", "MISS", "") for row in rows), rows
        full, subset = (
            next(r for r in report["results"] if r["unit"] == f"chain {fmt} {size}")
            for size in ("full", "subset")
        )
        # Resumed from exactly a tenth and nine tenths of the epoch (87 and 20 steps).
        assert full["resume_steps"] == {"10": 8, "90": 72}, full
        assert subset["resume_steps"] == {"10": 2, "90": 18}, subset
    text = (tmp_path / "input.md").read_text()
    assert text in done.stdout
    for expected in ("## memmap", "## tfrecord", "| time to first step (s) |", "rchar"):
        assert expected in text, text


def test_a_unit_that_failed_leaves_its_figures_not_measured():
    results = [
        {
            "unit": "chain memmap full",
            "first_step_seconds": 9.0,
            "resume_seconds": {"10": 5.0, "90": 30.0},
            "resume_steps": {"10": 10, "90": 90},
            "steps_per_epoch": 100,
            "one_worker": {"examples_per_second": 1000.0, "bytes_per_step": [2000.0]},
        },
        {
            "unit": "chain memmap subset",
            "first_step_seconds": 6.0,
            "resume_seconds": {"10": 5.0, "90": 5.0},
            "resume_steps": {"10": 1, "90": 9},
            "steps_per_epoch": 10,
        },
        {"unit": "probe memmap", "input": {"examples_per_second": 1500.0}},
    ]
    rows = {r["figure"].split(" (")[0]: r for r in input_report.rows("memmap", results)}
    assert rows["time to first step"]["ratio"] == 1.5
    assert rows["time to first step"]["result"] == "PASS"
    assert rows["resume latency at 90%"]["result"] == "MISS"  # 6x the subset's
    assert rows["input alone, 1 worker"]["result"] == "MISS"  # 1.5x training
    assert rows["bytes read per epoch, 1 worker"]["full"] == 200_000.0
    two = rows["bytes read per epoch per worker, 2 workers"]
    assert (two["full"], two["result"]) == (None, "not measured")
    found = input_report.rows("memmap", results)
    assert input_report.extrapolated(results[0], found) == [
        "(no extrapolation: a figure it needs is missing)"
    ]
