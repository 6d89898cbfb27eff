"""`tf_mgpu.train`, the engine called from Python: its settings and what it writes."""

import os
import subprocess
import sys
import tempfile

import tf_mgpu
from tests import support
from tests.keras.helpers import load
from tf_mgpu import compile_cache


def python(code: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh Python (TensorFlow not loaded) from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_unknown_setting_is_a_user_error_naming_it_before_tensorflow_loads():
    code = (
        "import sys, tf_mgpu\n"
        "from tf_mgpu.errors import UserError\n"
        "try:\n"
        "    tf_mgpu.train(epoch=2, strategy='one_device')\n"
        "except UserError as e:\n"
        "    print('UserError:', e)\n"
        "print('tensorflow loaded:', 'tensorflow' in sys.modules)\n"
    )
    done = python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("UserError: tf_mgpu.train: unknown settings epoch;"), lines
    assert "epochs" in lines[0], "the error lists the settings there are"
    assert "strategy" not in lines[0].split(";")[0], "a known setting named as unknown"
    assert lines[1] == "tensorflow loaded: False", lines


def test_a_bad_setting_is_refused_naming_it_as_the_flag_is_before_tensorflow_loads():
    # The same check as main's flags (tf_mgpu.config_checks), for each kind of mistake.
    code = (
        "import sys, tf_mgpu\n"
        "from tf_mgpu.errors import SettingError\n"
        "for bad in [dict(batch_size=0), dict(epochs='two'), dict(dtype='float8'),\n"
        "            dict(steps_per_loop='fast')]:\n"
        "    try:\n"
        "        tf_mgpu.train(strategy='one_device', **bad)\n"
        "    except SettingError as e:\n"
        "        print(e.exit_code, e)\n"
        "print('tensorflow loaded:', 'tensorflow' in sys.modules)\n"
    )
    done = python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "2 tf_mgpu.train: batch_size=0: must be an integer of at least 1",
        "2 tf_mgpu.train: epochs='two': must be an integer of at least 1, not str",
        "2 tf_mgpu.train: dtype='float8': must be one of float32, mixed_bfloat16, "
        "mixed_float16, float64",
        "2 tf_mgpu.train: steps_per_loop='fast': must be auto or a positive integer",
        "tensorflow loaded: False",
    ], done.stdout


def test_model_dir_none_writes_nothing(tmp_path, monkeypatch):
    # A fresh working directory and home, and XLA's cache flag unset so that train
    # picks its cache folder here as in a fresh process: the only thing it may create
    # is that folder, in the TFDS data dir (README, "Start-up"), not a run's outputs.
    # Temporary files (each save's scratch checkpoint) go to a folder of the test's too.
    cwd, home, scratch = tmp_path / "cwd", tmp_path / "home", tmp_path / "tmp"
    for folder in (cwd, home, scratch):
        folder.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TFDS_DATA_DIR", raising=False)
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    summary = tf_mgpu.train(
        task=load("loss_reduction"), strategy="one_device", epochs=1, batch_size=32
    )
    assert summary["test_examples"] == 256, summary
    assert list(cwd.iterdir()) == [], "something was written into the working directory"
    # AutoGraph (TensorFlow's) leaves the source of each function it converts first in this
    # process there: this test run alone sees one; after other tests, none.
    ours = [p for p in scratch.iterdir() if not p.name.startswith("__autograph_generated_file")]
    assert ours == [], "a temporary file was left behind"
    cache = home / "tensorflow_datasets" / compile_cache.FOLDER
    assert os.environ["TF_XLA_FLAGS"].endswith(compile_cache.folder(str(cache)))
    outside = [p for p in home.rglob("*") if cache not in (p, *p.parents)]
    assert outside == [(home / "tensorflow_datasets")], outside
