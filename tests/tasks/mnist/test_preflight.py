"""Checks made before TensorFlow loads: they must not load it, and must name the fix."""

import subprocess
import sys

import pytest

from tests import support
from tf_mgpu.cluster import startup_checks as cluster_preflight
from tf_mgpu.cluster import tf_config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import preflight


def test_preflight_and_main_import_no_tensorflow():
    code = (
        "import sys, tf_mgpu.main, tf_mgpu.cluster.startup_checks, tf_mgpu.tasks.mnist.preflight; "
        "print('tensorflow' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=support.ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def put_manual_files(folder) -> None:
    folder.mkdir(parents=True)
    for name in preflight.MANUAL_FILES:
        (folder / name).write_bytes(b"")


@pytest.fixture
def offline(monkeypatch):
    asked = []

    def unreachable(host, port, seconds):
        asked.append(host)
        return False

    monkeypatch.setattr(preflight, "reachable", unreachable)
    return asked


def test_no_data_no_files_and_no_network_is_one_line_naming_both_fixes(tmp_path, offline):
    with pytest.raises(UserError, match="cannot be reached") as raised:
        preflight.data(str(tmp_path), None)
    assert "--manual_dir=DIR" in str(raised.value)
    assert str(tmp_path / "downloads" / "manual") in str(raised.value)
    assert offline == [preflight.DOWNLOAD_HOST]


def test_a_launcher_worker_without_network_is_told_why_and_the_way_out(
    tmp_path, offline, monkeypatch
):
    monkeypatch.setenv("TF_MGPU_PRIVATE_NETWORK", "1")  # as tf_mgpu.launch sets it
    with pytest.raises(UserError, match="cannot be reached") as raised:
        preflight.data(str(tmp_path), None)
    assert "tf_mgpu.launch runs its workers without network" in str(raised.value)
    assert "--noprivate_network" in str(raised.value)
    monkeypatch.delenv("TF_MGPU_PRIVATE_NETWORK")
    with pytest.raises(UserError) as raised:
        preflight.data(str(tmp_path), None)
    assert "tf_mgpu.launch" not in str(raised.value)


def test_prepared_data_or_manual_files_need_no_network(tmp_path, offline):
    put_manual_files(tmp_path / "default" / "downloads" / "manual")
    preflight.data(str(tmp_path / "default"), None)  # TFDS's own manual folder
    put_manual_files(tmp_path / "given")
    preflight.data(str(tmp_path / "empty"), str(tmp_path / "given"))
    (tmp_path / "prepared" / "mnist" / "3.0.1").mkdir(parents=True)
    (tmp_path / "prepared" / "mnist" / "3.0.1" / "dataset_info.json").write_text("{}")
    preflight.data(str(tmp_path / "prepared"), None)
    assert offline == []


def test_tfds_data_dir_follows_tfds(monkeypatch, tmp_path):
    assert preflight.tfds_data_dir("/given") == "/given"
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
    assert preflight.tfds_data_dir(None) == str(tmp_path)


def test_the_probe_is_bounded_and_false_for_a_closed_port():
    port = support.local.free_ports(1)[0]
    assert preflight.reachable("127.0.0.1", port, 2.0) is False


def test_model_dir_and_strategy_checks(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="is a file"):
        cluster_preflight.model_dir(str(tmp_path / "file"))
    cluster_preflight.model_dir(str(tmp_path / "new" / "run"))
    assert (tmp_path / "new" / "run").is_dir()
    two = tf_config.Node(addresses=("a:1", "b:2"))
    assert cluster_preflight.strategy("mirrored", two) == "multi_worker_mirrored"
    with pytest.raises(UserError, match="trains on one device"):
        cluster_preflight.strategy("one_device", two)
