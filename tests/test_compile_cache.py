"""XLA's persistent compilation cache: where it lives, when it is off, that it changes nothing."""

import os

import pytest

from tests import support
from tf_mgpu import compile_cache


@pytest.fixture
def no_xla_flags(monkeypatch):
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)


def test_the_default_lives_in_the_data_dir_named_after_tensorflow_and_the_cpu(
    tmp_path, no_xla_flags
):
    path = compile_cache.enable(None, str(tmp_path / "tfds"))
    assert os.path.dirname(path) == str(tmp_path / "tfds" / "tf_mgpu_cache")
    assert os.path.basename(path).startswith("xla-tf2.")
    assert os.path.isdir(path)
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_persistent_cache_directory={path}"


@pytest.mark.parametrize("off", ["none", "", "OFF"])
def test_none_turns_it_off(tmp_path, no_xla_flags, off):
    assert compile_cache.enable(off, str(tmp_path)) is None
    assert "TF_XLA_FLAGS" not in os.environ


def test_a_cache_the_user_set_wins_and_other_xla_flags_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2")
    path = compile_cache.enable(str(tmp_path / "mine"), None)
    assert os.environ["TF_XLA_FLAGS"].split() == [
        "--tf_xla_auto_jit=2",
        f"--tf_xla_persistent_cache_directory={path}",
    ]
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_persistent_cache_directory=/theirs")
    assert compile_cache.enable(str(tmp_path / "mine"), None) is None
    assert os.environ["TF_XLA_FLAGS"] == "--tf_xla_persistent_cache_directory=/theirs"


def test_an_unwritable_place_means_no_cache(tmp_path, no_xla_flags):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert compile_cache.enable(str(blocker), None) is None
    assert "TF_XLA_FLAGS" not in os.environ


def cached(folder) -> set[str]:
    return {name for name in os.listdir(folder) if name.endswith(".pb")}


@pytest.mark.cluster
def test_a_warm_cache_gives_the_same_weights_and_a_new_batch_compiles_anew(
    tmp_path, mnist_data_dir
):
    root = tmp_path / "cache"

    def run(name: str, *extra: str, fresh: bool = False):
        args = [
            f"--data_dir={mnist_data_dir}",
            "--train_split=train[:1024]",
            "--test_split=test[:256]",
            "--epochs=1",
            "--strategy=one_device",
            f"--compile_cache={root}",
            f"--model_dir={tmp_path / name / 'model'}",
            *extra,
        ]
        finished = support.run_main(args, tmp_path / name, 180, fresh=fresh)
        assert finished.returncode == 0, finished.tail()
        return support.digests(finished)["sha256"]

    # Fresh: main must name the cache before TensorFlow sets up its devices, as it loads.
    cold = run("cold", fresh=True)
    (folder,) = [root / name for name in os.listdir(root)]
    compiled = cached(folder)
    assert compiled, "the first run cached nothing"
    assert run("warm") == cold
    assert cached(folder) == compiled  # nothing compiled again
    run("other_batch", "--batch_size=32")
    assert cached(folder) > compiled  # a new program: compiled and cached beside the others
