"""Printed lines and the chief's files."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tf_mgpu.engine.input import data, stream
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import report
from tf_mgpu.tasks import mnist_mlp

RECORD = {
    "epoch": 3,
    "train_loss": 0.25,
    "train_accuracy": 0.9,
    "test_loss": 0.2,
    "test_accuracy": 0.95,
    "examples_per_second": 51234.5,
    "seconds": 1.17,
}


def test_dropped_line_says_how_many_examples_each_epoch_leaves_out():
    line = report.dropped_line(20_000, 60_000, 40_000)
    assert "20,000 of the 60,000 training examples (33%)" in line, line
    assert "--batch_size" in line, line


def test_epoch_line_shows_every_figure():
    line = report.epoch_line(RECORD, epochs=10)
    assert line.startswith("epoch  3/10"), line
    for text in ("train_loss 0.2500", "train_acc 0.9000", "test_loss 0.2000", "test_acc 0.9500"):
        assert text in line, line
    assert "51,234 ex/s" in line or "51,235 ex/s" in line, line
    assert line.endswith("1.2 s"), line


def test_outputs_without_model_dir_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outputs = report.Outputs(None)
    outputs.begin("--epochs=1\n")
    outputs.epoch(RECORD)
    outputs.weights(mnist_mlp.build_model())
    outputs.summary({"test_accuracy": 1.0})
    assert list(tmp_path.iterdir()) == []


def test_outputs_of_a_run_land_whole_and_leave_no_partial_files(tmp_path):
    outputs = report.Outputs(str(tmp_path))
    outputs.check()
    outputs.begin("--epochs=2\n")
    outputs.epoch(RECORD)
    outputs.epoch({**RECORD, "epoch": 4})
    outputs.weights(mnist_mlp.build_model())
    outputs.summary({"test_accuracy": 0.95})
    logged = [json.loads(line) for line in (tmp_path / report.METRICS).read_text().splitlines()]
    assert [r["epoch"] for r in logged] == [3, 4]
    assert (tmp_path / report.FLAGS).read_text() == "--epochs=2\n"
    assert json.loads((tmp_path / report.SUMMARY).read_text()) == {"test_accuracy": 0.95}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [report.METRICS, report.FLAGS, report.SUMMARY, report.WEIGHTS]
    )


def test_a_resumed_run_keeps_the_epochs_its_checkpoint_holds_and_no_later_ones(tmp_path):
    outputs = report.Outputs(str(tmp_path))
    outputs.begin("--epochs=5\n")
    for epoch in (1, 2, 3):  # the run died after logging epoch 3, before its checkpoint
        outputs.epoch({**RECORD, "epoch": epoch})
    kept = outputs.resume(2, "--epochs=5\n")
    assert [r["epoch"] for r in kept] == [1, 2]
    outputs.epoch({**RECORD, "epoch": 3})
    logged = [json.loads(line) for line in (tmp_path / report.METRICS).read_text().splitlines()]
    assert [r["epoch"] for r in logged] == [1, 2, 3]


def test_outputs_write_a_non_finite_value_as_null_never_as_invalid_json(tmp_path):
    outputs = report.Outputs(str(tmp_path))
    outputs.begin(None)
    outputs.epoch({**RECORD, "train_loss": float("nan"), "test_loss": float("inf")})
    outputs.summary({"learning_rate": float("nan"), "history": [{"x": -float("inf")}]})

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    line = (tmp_path / report.METRICS).read_text()
    record = json.loads(line, parse_constant=refuse)
    assert record["train_loss"] is None
    assert record["test_loss"] is None
    summary = json.loads((tmp_path / report.SUMMARY).read_text(), parse_constant=refuse)
    assert summary == {"learning_rate": None, "history": [{"x": None}]}


def test_clean_deletes_only_this_programs_files(tmp_path):
    for name in (report.SUMMARY, report.METRICS, report.FLAGS, report.WEIGHTS, "notes.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / checkpoint.DIRECTORY).mkdir()
    (tmp_path / checkpoint.DIRECTORY / "ckpt-1.index").write_text("x")
    outputs = report.Outputs(str(tmp_path))
    assert outputs.has_outputs()
    outputs.clean()
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    assert not outputs.has_outputs()


def test_a_model_dir_that_is_a_file_is_a_user_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="is a file; choose a folder"):
        report.Outputs(str(tmp_path / "file")).check()


def test_a_model_dir_that_cannot_be_created_is_a_user_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="cannot be created"):
        report.Outputs(str(tmp_path / "file" / "run")).check()


def test_the_batched_line_names_every_split_the_user_batched_and_the_batch_read():
    pairs = tf.data.Dataset.from_tensor_slices((np.zeros((100, 2), np.float32), np.zeros(100)))
    plain = stream.scan(pairs, "t", "train")
    by_32 = stream.scan(pairs.batch(32), "t", "train")
    dropped = stream.scan(pairs.batch(16, drop_remainder=True), "t", "test")
    assert report.batched_line(data.Data(train=plain, test=plain), 64, 64) is None
    line = report.batched_line(data.Data(train=by_32, test=plain), 64, 64)
    assert line == (
        "tf_mgpu data: the training dataset is batched (by 32); it is unbatched and read at "
        "the global batch of 64"
    )
    line = report.batched_line(data.Data(train=by_32, test=dropped, validation=by_32), 64, 32)
    assert line == (
        "tf_mgpu data: the training, validation and test datasets are batched (by 32, by 32 "
        "and by 16, drop_remainder=True); they are unbatched and read at the global batch of "
        "64 (evaluated at 32)"
    )
