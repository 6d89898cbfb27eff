"""Printed lines and the chief's files."""

import json

import numpy as np
import pytest

from tf_mgpu import model, report
from tf_mgpu.errors import UserError

RECORD = {
    "epoch": 3,
    "train_loss": 0.25,
    "train_accuracy": 0.9,
    "test_loss": 0.2,
    "test_accuracy": 0.95,
    "examples_per_second": 51234.5,
    "seconds": 1.17,
}


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
    outputs.finish({"test_accuracy": 1.0}, model.build_model())
    assert list(tmp_path.iterdir()) == []


def test_outputs_replace_the_previous_run_and_leave_no_partial_files(tmp_path):
    (tmp_path / report.METRICS).write_text('{"epoch": 99}\n')
    outputs = report.Outputs(str(tmp_path))
    outputs.check()
    outputs.begin("--epochs=2\n")
    outputs.epoch(RECORD)
    outputs.epoch({**RECORD, "epoch": 4})
    outputs.finish({"test_accuracy": 0.95}, model.build_model())
    logged = [json.loads(line) for line in (tmp_path / report.METRICS).read_text().splitlines()]
    assert [r["epoch"] for r in logged] == [3, 4]
    assert (tmp_path / report.FLAGS).read_text() == "--epochs=2\n"
    assert json.loads((tmp_path / report.SUMMARY).read_text()) == {"test_accuracy": 0.95}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [report.METRICS, report.FLAGS, report.SUMMARY, report.WEIGHTS]
    )


def test_an_unfinished_run_leaves_the_previous_outputs_as_they_were(tmp_path):
    previous = {report.SUMMARY: "{}\n", report.METRICS: '{"epoch": 1}\n', report.FLAGS: "--x\n"}
    for name, text in previous.items():
        (tmp_path / name).write_text(text)
    outputs = report.Outputs(str(tmp_path))
    outputs.check()
    outputs.begin("--epochs=5\n")
    outputs.epoch(RECORD)  # then the run dies: no finish()
    for name, text in previous.items():
        assert (tmp_path / name).read_text() == text, name


def test_a_model_dir_that_cannot_be_created_is_a_user_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="cannot be created"):
        report.Outputs(str(tmp_path / "file" / "run")).check()


def test_weights_digest_sees_a_one_ulp_change():
    net = model.build_model()
    before = report.weights_digest(net)
    assert report.weights_digest(net) == before
    kernel = net.weights[0]
    value = kernel.numpy()
    value[0, 0] = np.nextafter(value[0, 0], np.float32(1))
    kernel.assign(value)
    assert report.weights_digest(net) != before
