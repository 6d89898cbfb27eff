"""TensorBoard logs, read back from the event files a real training run wrote; and the fields
of the summary.json and metrics.jsonl the same run wrote."""

import dataclasses
import glob
import json
import math
import os
import pathlib

import pytest
import tensorflow as tf

from tests.support import cpu_strategy, fresh_collective_keys, subset
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.outputs import fields, tensorboard

# 2048 examples at a global batch of 64 (2 replicas x 32): 32 steps per epoch,
# calls of 8 steps, a training point every 16 steps (and at each epoch's end).
STEPS = 32
RUN = Config(
    batch_size=32,
    epochs=2,
    learning_rate=0.1,
    seed=4,
    steps_per_loop=8,
    log_steps=16,
    checkpoint_steps=1000,
)


def events(directory: str) -> list:
    paths = sorted(glob.glob(os.path.join(directory, "*tfevents*")))
    return [e for path in paths for e in tf.compat.v1.train.summary_iterator(path)]


def scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """Tag -> [(step, value)] of every scalar in a run's event files, in file order."""
    found: dict[str, list[tuple[int, float]]] = {}
    for event in events(directory):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == "scalars":
                point = (event.step, float(tf.make_ndarray(value.tensor)))
                found.setdefault(value.tag, []).append(point)
    return found


def plugins(directory: str) -> set[str]:
    return {v.metadata.plugin_data.plugin_name for e in events(directory) for v in e.summary.value}


def train_into(model_dir, mnist, epochs: int = 2) -> training.Result:
    fresh_collective_keys()
    config = dataclasses.replace(RUN, epochs=epochs, model_dir=str(model_dir))
    return training.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 2048, 500))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, mnist) -> tuple[training.Result, pathlib.Path]:
    """One run of RUN, never interrupted, shared by the tests that read its logs."""
    model_dir = tmp_path_factory.mktemp("uninterrupted")
    return train_into(model_dir, mnist), model_dir


def test_a_run_logs_epoch_metrics_training_curve_and_hparams(uninterrupted):
    _, tmp_path = uninterrupted
    root = tmp_path / tensorboard.DIRECTORY
    history = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]

    for run in tensorboard.RUNS:
        logged = scalars(str(root / run))
        for name in ("loss", "accuracy"):
            expected = [((i + 1) * STEPS, r[f"{run}_{name}"]) for i, r in enumerate(history)]
            got = logged[f"epoch_{name}"]
            assert [s for s, _ in got] == [s for s, _ in expected], got
            for (_, value), (_, want) in zip(got, expected, strict=True):
                assert value == pytest.approx(want, rel=1e-6), (run, name)

    curve = scalars(str(root / "train"))
    assert [s for s, _ in curve["loss"]] == [16, 32, 48, 64]
    assert [s for s, _ in curve["examples_per_second"]] == [16, 32, 48, 64]
    assert curve["learning_rate"] == [(s, pytest.approx(0.1)) for s in (16, 32, 48, 64)]
    losses = [v for _, v in curve["loss"]]
    assert all(math.isfinite(v) and v > 0 for v in losses), losses
    assert losses[-1] < losses[0], f"the loss did not fall: {losses}"
    # Two points per epoch of equal length: their mean is the epoch's mean loss.
    for i, record in enumerate(history):
        mean = (losses[2 * i] + losses[2 * i + 1]) / 2
        assert mean == pytest.approx(record["train_loss"], rel=1e-6)
    assert all(v > 0 for _, v in curve["examples_per_second"])

    assert "hparams" in plugins(str(root)), "no HParams session at the top of the log dir"


def declared_name(key: str, metrics: set[str]) -> str:
    """`key` as tf_mgpu.outputs.fields declares it: `test_accuracy` is `test_<metric>`."""
    split, _, name = key.partition("_")
    return (
        f"{split}_{fields.METRIC}" if split in ("train", "val", "test") and name in metrics else key
    )


def test_the_runs_files_hold_exactly_the_fields_the_reference_declares(uninterrupted):
    """docs/reference.md is generated from tf_mgpu.outputs.fields: a field written without its
    line there, or declared and no longer written, fails here."""
    _, model_dir = uninterrupted
    lines = [json.loads(text) for text in (model_dir / "metrics.jsonl").read_text().splitlines()]
    summary = json.loads((model_dir / "summary.json").read_text())
    metrics = {key.removeprefix("train_") for key in lines[0] if key.startswith("train_")}
    metrics -= {"loss", "examples"}
    assert metrics == {"accuracy"}, lines[0]
    for what, written, declared in [
        *(("metrics.jsonl", record, fields.EPOCH) for record in lines),
        ("summary.json", summary, fields.SUMMARY),
    ]:
        shaped = {declared_name(key, metrics) for key in written}
        unknown = sorted(shaped - set(declared))
        assert not unknown, f"{what} writes {unknown}: declare them in tf_mgpu/outputs/fields.py"
        always = {name for name, field in declared.items() if field.only is None}
        assert not always - shaped, f"{what} lacks {sorted(always - shaped)}, declared always"
    assert summary["history"] == lines


def test_a_resumed_run_continues_the_curves_without_duplicates(tmp_path, mnist, uninterrupted):
    reference, reference_dir = uninterrupted
    run = tmp_path / "run"
    train_into(run, mnist)
    # As if the run died in epoch 2 after writing its points but before its last
    # checkpoint: drop that checkpoint, so the rerun redoes epoch 2 from step 32.
    for path in glob.glob(str(run / checkpoint.DIRECTORY / f"ckpt-{2 * STEPS}.*")):
        os.remove(path)
    resumed = train_into(run, mnist)
    assert resumed.summary["weights_sha256"] == reference.summary["weights_sha256"]

    for name in tensorboard.RUNS:
        got = scalars(str(run / tensorboard.DIRECTORY / name))
        want = scalars(str(reference_dir / tensorboard.DIRECTORY / name))
        assert sorted(got) == sorted(want)
        for tag in got:
            steps = [s for s, _ in got[tag]]
            assert steps == sorted(set(steps)), f"{name}/{tag} repeats or reorders: {steps}"
            assert steps == [s for s, _ in want[tag]], tag
            if tag != "examples_per_second":  # the one value that is a timing
                assert [v for _, v in got[tag]] == pytest.approx([v for _, v in want[tag]])


def test_truncate_keeps_the_points_up_to_the_step(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in (10, 20, 30):
            tf.summary.scalar("loss", float(step), step=step)
    writer.close()
    (path,) = glob.glob(str(tmp_path / "*tfevents*"))
    tensorboard.truncate(path, 20)
    assert scalars(str(tmp_path)) == {"loss": [(10, 10.0), (20, 20.0)]}
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(path)]


def test_interval_means_span_epochs_and_a_resumed_epoch():
    interval = tensorboard.Interval()
    interval.start_epoch()
    interval.update(loss=10.0, examples=10, seconds=1.0)  # the epoch's running sums
    interval.update(loss=30.0, examples=20, seconds=1.0)
    assert interval.take() == (pytest.approx(1.5), pytest.approx(10.0))
    interval.update(loss=36.0, examples=30, seconds=2.0)
    interval.start_epoch()  # a new epoch starts its sums at zero
    interval.update(loss=2.0, examples=10, seconds=0.0)
    assert interval.take() == (pytest.approx(8 / 20), pytest.approx(10.0))
    interval.start_epoch(loss=100.0, examples=50)  # resumed mid-epoch from these sums
    interval.update(loss=104.0, examples=60, seconds=1.0)
    assert interval.take() == (pytest.approx(0.4), pytest.approx(10.0))


def test_the_training_curve_also_gets_a_point_at_each_epoch_end(tmp_path, mnist):
    fresh_collective_keys()
    config = dataclasses.replace(RUN, log_steps=24, model_dir=str(tmp_path))
    training.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 2048, 500))
    curve = scalars(str(tmp_path / tensorboard.DIRECTORY / "train"))
    assert [s for s, _ in curve["loss"]] == [24, 32, 56, 64]
