"""A run's flags.txt read back: found from any form of --model, and only the flags that say
what the model is and which data it was tested on taken from it, never over a given one."""

import pytest
from absl import flags

from tf_mgpu.errors import UserError
from tf_mgpu.outputs import flagfile


def run_dir(tmp_path, text: str):
    """A model dir as main leaves it: flags.txt, model.keras and a SavedModel folder."""
    (tmp_path / "flags.txt").write_text(text)
    (tmp_path / "model.keras").write_bytes(b"zip")
    (tmp_path / "saved_model").mkdir()
    (tmp_path / "saved_model" / "saved_model.pb").write_bytes(b"pb")
    return tmp_path


def command_flags(argv: list[str]) -> flags.FlagValues:
    """A command's own flags, as evaluate defines them, parsed from `argv`."""
    values = flags.FlagValues()
    flags.DEFINE_string("task", "mnist_mlp", "", flag_values=values)
    flags.DEFINE_string("data_dir", None, "", flag_values=values)
    flags.DEFINE_string("test_split", "test", "", flag_values=values)
    flags.DEFINE_integer("epochs", 1, "", flag_values=values)  # main's too, not the model's
    values(["evaluate", *argv])
    return values


RECORDED = "--task=mnist_cnn\n--data_dir=/data/tfds\n--test_split=test[:2000]\n--epochs=9\n"


@pytest.mark.parametrize("form", ["", "model.keras", "saved_model"])
def test_the_run_dir_or_an_export_in_it_finds_the_runs_flags_txt(tmp_path, form):
    folder = run_dir(tmp_path, RECORDED)
    assert flagfile.find(str(folder / form) if form else str(folder)) == str(folder / "flags.txt")


def test_no_flags_txt_is_none_and_nothing_is_taken(tmp_path):
    (tmp_path / "flags.txt").write_text(RECORDED)  # a folder above: not the model's run
    model_dir = tmp_path / "api_run"
    model_dir.mkdir()
    (model_dir / "model.keras").write_bytes(b"zip")
    assert flagfile.find(str(model_dir)) is None
    assert flagfile.find(str(tmp_path / "no_such_model")) is None
    values = command_flags([])
    assert flagfile.take(str(model_dir), values) == flagfile.Taken()
    assert values.task == "mnist_mlp"


def test_the_runs_task_data_and_split_are_taken_but_given_flags_win(tmp_path):
    folder = run_dir(tmp_path, RECORDED)
    values = command_flags(["--test_split=test[:10]"])
    taken = flagfile.take(str(folder / "saved_model"), values)
    assert taken == flagfile.Taken(str(folder / "flags.txt"), ("task", "data_dir"))
    assert (values.task, values.data_dir, values.test_split) == (
        "mnist_cnn",
        "/data/tfds",
        "test[:10]",
    )
    assert values.epochs == 1  # how the run trained is not the model's


def test_read_keeps_the_last_setting_and_skips_comments(tmp_path):
    path = tmp_path / "flags.txt"
    path.write_text("# written by hand\n\n--task=a.py\n--noclean\n  --task=b.py  \n")
    assert flagfile.read(str(path)) == {"task": "b.py"}


def test_a_task_file_gone_since_the_run_is_a_user_error_naming_it(tmp_path):
    gone = tmp_path / "moved" / "task.py"
    folder = run_dir(tmp_path, f"--task={gone}\n")
    with pytest.raises(UserError, match=f"--task={gone}, the task of the run in {folder}"):
        flagfile.take(str(folder), command_flags([]))
    # Given on the command line, the file named in flags.txt does not matter.
    values = command_flags(["--task=mnist_mlp"])
    assert flagfile.take(str(folder), values).names == ()
