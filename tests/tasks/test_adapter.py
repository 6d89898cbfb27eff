"""Bad task files: one clear line naming the file and the fix, before --model_dir is touched.

An exception raised inside the user's own code keeps its traceback (exit 1).
"""

import json
import textwrap

import keras
import pytest
import tensorflow as tf

from tests import support
from tests.support import cpu_strategy
from tf_mgpu import errors, training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter

GOOD_MODEL = """
import keras
import numpy as np

def build_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
"""
GOOD_DATA = """
def load_data():
    x = np.random.default_rng(0).random((64, 4), np.float32)
    y = np.arange(64) % 3
    return (x, y), (x[:16], y[:16])
"""
BAD_TASKS = {
    "syntax": ("def build_model(:\n", "does not import: "),
    "import": ("import no_such_module_here\n", "No module named 'no_such_module_here'"),
    "no_build_model": (
        GOOD_DATA.replace("def load_data", "import numpy as np\ndef load_data"),
        "defines no build_model()",
    ),
    "not_compiled": (
        GOOD_MODEL.replace("    model.compile(", "    dict(") + GOOD_DATA,
        "is not compiled with a loss",
    ),
    "wrong_shape": (
        GOOD_MODEL + GOOD_DATA.replace("(64, 4)", "(64, 5)"),
        "load_data's x has examples of shape (5,), but the model takes (4,)",
    ),
    "lengths": (
        GOOD_MODEL + GOOD_DATA.replace("y = np.arange(64) % 3", "y = np.arange(63) % 3"),
        "x_train has 64 rows but y_train has 63",
    ),
    "returns": (GOOD_MODEL + "def load_data():\n    return 3\n", "load_data() returned int"),
}


def write_task(tmp_path, text: str):
    path = tmp_path / "task.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("kind", list(BAD_TASKS))
def test_a_bad_task_is_one_line_naming_the_file(tmp_path, kind):
    text, expected = BAD_TASKS[kind]
    path = write_task(tmp_path, text)
    with pytest.raises(UserError) as error:
        training.run(Config(task=str(path), epochs=1, batch_size=8), strategy=cpu_strategy(1))
    assert str(path) in str(error.value), error.value
    assert expected in str(error.value), error.value


def test_a_task_path_that_does_not_exist_is_named():
    with pytest.raises(UserError, match=r"--task=nowhere/task\.py: no such file"):
        adapter.load("nowhere/task.py")


def test_a_good_task_file_trains(tmp_path):
    path = write_task(tmp_path, GOOD_MODEL + GOOD_DATA)
    result = training.run(Config(task=str(path), epochs=1, batch_size=8), strategy=cpu_strategy(1))
    assert result.summary["test_examples"] == 16
    assert set(result.summary) >= {"test_loss", "test_accuracy"}


def earlier_run(model_dir):
    model_dir.mkdir()
    (model_dir / "summary.json").write_text("{}")
    return {p.name: p.read_bytes() for p in model_dir.iterdir()}


def test_a_bad_task_exits_3_and_leaves_the_model_dir_alone(tmp_path):
    path = write_task(tmp_path, GOOD_MODEL.replace("    model.compile(", "    dict(") + GOOD_DATA)
    before = earlier_run(tmp_path / "model")
    args = [f"--task={path}", "--clean", f"--model_dir={tmp_path / 'model'}", "--epochs=1"]
    done = support.run_main(args, tmp_path / "logs", timeout=120)
    line = support.assert_one_line_exit(done, errors.EXIT_USER_ERROR, "is not compiled")
    assert str(path) in line
    assert {p.name: p.read_bytes() for p in (tmp_path / "model").iterdir()} == before


def test_an_error_in_the_users_own_code_keeps_its_traceback(tmp_path):
    path = write_task(
        tmp_path, GOOD_MODEL + "def load_data():\n    raise RuntimeError('my own bug')\n"
    )
    args = [f"--task={path}", f"--model_dir={tmp_path / 'model'}"]
    done = support.run_main(args, tmp_path / "logs", timeout=120)
    assert done.returncode == 1, done.tail()
    assert "Traceback" in done.stderr, done.tail()
    assert "my own bug" in done.stderr, done.tail()
    assert "task.py" in done.stderr, done.tail()


REGRESSION = """
import keras
import numpy as np

def build_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model

def load_data():
    x = np.random.default_rng(1).random((96, 3), np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32)
    return (x, y), (x[:32], y[:32])
"""


def test_a_task_without_accuracy_reports_its_own_metrics_everywhere(tmp_path):
    path = write_task(tmp_path, REGRESSION)
    config = Config(task=str(path), epochs=2, batch_size=8, model_dir=str(tmp_path / "run"))
    summary = training.run(config, strategy=cpu_strategy(2)).summary
    assert "test_accuracy" not in summary, summary
    assert summary["test_mae"] > 0
    assert summary["test_examples"] == 32
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [sorted(k for k in r if k.endswith("mae")) for r in records] == [
        ["test_mae", "train_mae"]
    ] * 2
    events = tf.data.TFRecordDataset(
        [str(p) for p in (tmp_path / "run" / "tensorboard" / "test").glob("*tfevents*")]
    )
    tags = {
        value.tag
        for record in events
        for value in tf.compat.v1.Event.FromString(record.numpy()).summary.value
    }
    assert {"epoch_loss", "epoch_mae"} <= tags, tags
    exported = keras.saving.load_model(tmp_path / "run" / "model.keras")
    assert exported.loss == "mse"


@pytest.mark.parametrize(("given", "expected"), [(None, 0.05), (0.2, 0.2)])
def test_the_compiled_rate_holds_unless_the_flag_is_given(tmp_path, given, expected):
    path = write_task(tmp_path, REGRESSION)
    config = Config(task=str(path), epochs=1, batch_size=8, learning_rate=given)
    summary = training.run(config, strategy=cpu_strategy(1)).summary
    assert summary["learning_rate"] == pytest.approx(expected)
