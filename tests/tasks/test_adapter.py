"""Bad task files: one clear line naming the file and the fix, before --model_dir is touched.

An exception raised inside the user's own code keeps its traceback (exit 1).
"""

import dataclasses
import json
import sys
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
    "import": (
        "import no_such_module_here\n",
        "No module named 'no_such_module_here' (",
    ),
    "import_hint": ("import no_such_module_here\n", "; install the package that provides it"),
    "no_build_model": (
        GOOD_DATA.replace("def load_data", "import numpy as np\ndef load_data"),
        "defines no build_model()",
    ),
    "not_compiled": (
        GOOD_MODEL.replace("    model.compile(", "    dict(") + GOOD_DATA,
        "is not compiled; call model.compile(optimizer=..., loss=...",
    ),
    "no_loss": (
        GOOD_MODEL.replace(', loss="sparse_categorical_crossentropy"', "") + GOOD_DATA,
        "compiled without a loss, whose train_step does not make one (no add_loss either)",
    ),
    "no_labels": (
        GOOD_MODEL
        + GOOD_DATA.replace("return (x, y), (x[:16], y[:16])", "return (x, None), (x, None)"),
        "load_data's y is None, but the model is compiled with a loss",
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
    "label_range": (
        GOOD_MODEL + GOOD_DATA.replace("y = np.arange(64) % 3", "y = np.arange(64) % 5"),
        "y_train holds labels from 0 to 4, but the model outputs 3 classes (0..2); "
        "give the last layer 5 units or renumber the labels",
    ),
    # Out of range in the first examples, which build the model: still the one line.
    "label_range_first": (
        GOOD_MODEL + GOOD_DATA.replace("y = np.arange(64) % 3", "y = (np.arange(64) + 3) % 5"),
        "y_train holds labels from 0 to 4, but the model outputs 3 classes (0..2)",
    ),
    "non_finite": (
        GOOD_MODEL + GOOD_DATA.replace("    y = np", "    x[3, 1] = np.nan\n    y = np"),
        "x_train holds 1 non-finite values (NaN or inf); clean or impute them in load_data()",
    ),
    "empty": (
        GOOD_MODEL + GOOD_DATA.replace("(x[:16], y[:16])", "(x[:0], y[:0])"),
        "the test split is empty",
    ),
    "test_shape": (
        GOOD_MODEL + GOOD_DATA.replace("(x[:16], y[:16])", "(x[:16, :3], y[:16])"),
        "the test split's examples are shaped {'x': (3,), 'y': ()}, the training split's "
        "{'x': (4,), 'y': ()}",
    ),
    # keras.io's vivit names its tf.data mapping preprocess(frames, label).
    "preprocess_not_the_hook": (
        GOOD_MODEL + GOOD_DATA + "\ndef preprocess(frames, label):\n    return frames, label\n",
        "preprocess(frames, label) does not take one argument; tf_mgpu calls a task file's "
        "preprocess(x) on each batch's inputs",
    ),
}
# The same checks when load_data returns tf.data.Datasets (streamed, never held in memory).
STREAMED_DATA = GOOD_DATA.replace(
    "    return (x, y), (x[:16], y[:16])",
    "    import tensorflow as tf\n"
    "    return [tf.data.Dataset.from_tensor_slices(p) for p in ((x, y), (x[:16], y[:16]))]",
)
BAD_TASKS |= {
    "streamed_label_range": (
        GOOD_MODEL + STREAMED_DATA.replace("y = np.arange(64) % 3", "y = np.arange(64) % 5"),
        # Of known length, so checked as read: the first bad example is named.
        "the train dataset's example 3 has a label outside the model's 3 classes (0..2)",
    ),
    "streamed_non_finite": (
        GOOD_MODEL + STREAMED_DATA.replace("    y = np", "    x[3, 1] = np.inf\n    y = np"),
        "the train dataset's example 3 holds NaN or inf in x;",
    ),
    "streamed_test_shape": (
        GOOD_MODEL + STREAMED_DATA.replace("(x[:16], y[:16])", "(x[:16, :3], y[:16])"),
        "the test split's examples are shaped {'x': (3,), 'y': ()}, the training split's "
        "{'x': (4,), 'y': ()}",
    ),
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


def test_a_task_that_needs_an_extra_names_the_install(tmp_path, monkeypatch):
    # As where KerasHub is not installed (pip install -e . alone): None in sys.modules makes
    # `import keras_hub` raise the ModuleNotFoundError a missing package raises.
    monkeypatch.setitem(sys.modules, "keras_hub", None)
    path = write_task(tmp_path, "import keras_hub\n" + GOOD_MODEL + GOOD_DATA)
    with pytest.raises(UserError, match=r"install KerasHub: pip install -e '\.\[hub\]'"):
        adapter.load(str(path))


def test_a_task_path_that_does_not_exist_is_named():
    with pytest.raises(UserError, match=r"--task=nowhere/task\.py: no such file"):
        adapter.load("nowhere/task.py")


def test_a_good_task_file_trains(tmp_path):
    path = write_task(tmp_path, GOOD_MODEL + GOOD_DATA)
    result = training.run(Config(task=str(path), epochs=1, batch_size=8), strategy=cpu_strategy(1))
    assert result.summary["test_examples"] == 16
    assert set(result.summary) >= {"test_loss", "test_accuracy"}


@pytest.mark.parametrize("flag", ["train_split", "test_split"])
def test_a_split_flag_a_task_cannot_read_is_refused_not_ignored(tmp_path, flag):
    task = adapter.load(str(write_task(tmp_path, GOOD_MODEL + GOOD_DATA)))
    config = dataclasses.replace(Config(), **{flag: "train[:100]"})
    with pytest.raises(UserError, match=f"--{flag}=train\\[:100\\] chooses a TFDS split"):
        adapter.refuse_unread_splits(task, config)
    reads = adapter.load(
        str(write_task(tmp_path, GOOD_MODEL + GOOD_DATA.replace("load_data()", "load_data(c)")))
    )
    adapter.refuse_unread_splits(reads, config)  # load_data(config) may read it
    if flag == "train_split":  # from the command line, once: main passes what it was given
        write_task(tmp_path, GOOD_MODEL + GOOD_DATA)
        finished = support.run_main(
            [f"--task={tmp_path / 'task.py'}", f"--{flag}=train[:100]", "--epochs=1"],
            tmp_path / "logs",
            120,
        )
        support.assert_one_line_exit(finished, errors.EXIT_USER_ERROR, f"--{flag}=train[:100]")


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


TWO_INPUTS = """
import keras
import numpy as np

def build_model():
    a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([a, b]))
    model = keras.Model({"a": a, "b": b}, keras.layers.Dense(3)(hidden))
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model

def load_data():
    rng = np.random.default_rng(2)
    x = {"a": rng.random((100, 4), np.float32), "b": rng.random((100, 2), np.float32)}
    y = (x["a"].sum(axis=1) > 2).astype("int64")
    return (x, y), ({k: v[:30] for k, v in x.items()}, y[:30])
"""


@pytest.mark.parametrize("kind", ["resident", "index", "stream"])
def test_a_model_with_named_inputs_takes_a_dict_x_on_two_replicas(tmp_path, kind):
    path = write_task(tmp_path, TWO_INPUTS)
    config = Config(task=str(path), epochs=2, batch_size=8, input=kind, jit_compile=False)
    two = training.run(config, strategy=cpu_strategy(2)).summary
    one = training.run(dataclasses.replace(config, batch_size=16), strategy=cpu_strategy(1)).summary
    assert two["test_examples"] == 30  # 30 does not divide into global batches of 16
    assert two["global_batch"] == one["global_batch"] == 16
    assert two["test_loss"] == pytest.approx(one["test_loss"], abs=1e-5)


def test_a_module_and_a_module_attribute_name_tasks(tmp_path, monkeypatch):
    package = tmp_path / "my_tasks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "small.py").write_text(textwrap.dedent(GOOD_MODEL + GOOD_DATA))
    (package / "holder.py").write_text(
        "import types\nfrom my_tasks import small\n"
        "TASK = types.SimpleNamespace(build_model=small.build_model, load_data=small.load_data)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec in ("my_tasks.small", "my_tasks.holder:TASK"):
        result = training.run(Config(task=spec, epochs=1, batch_size=8), strategy=cpu_strategy(1))
        assert result.summary["task_name"] == spec
        assert result.summary["test_examples"] == 16
    with pytest.raises(UserError, match="has no attribute 'NOPE'"):
        adapter.load("my_tasks.holder:NOPE")
    with pytest.raises(UserError, match=r"no module named 'my_tasks\.nope'"):
        adapter.load("my_tasks.nope")


def test_a_model_held_to_the_global_batch_size_is_one_line_on_two_replicas(tmp_path):
    # As keras.io's DDIM or switch transformer write BATCH_SIZE into a shape: Keras's fit on
    # 2 replicas fails the same, with a shape error deep in its first step.
    held = GOOD_MODEL.replace(
        "keras.layers.Dense(3)]",
        "keras.layers.Dense(3), keras.layers.Lambda(lambda t: keras.ops.reshape(t, (16, 3)))]",
    )
    path = write_task(tmp_path, held + GOOD_DATA)
    config = Config(task=str(path), epochs=1, batch_size=8)
    with pytest.raises(UserError) as error:
        training.run(config, strategy=cpu_strategy(2))
    assert f"{path}: the model runs on a batch of 16 but not on a replica's share of 8" in str(
        error.value
    ), error.value
    assert "keras.ops.shape(x)[0]" in str(error.value)
    # The same model on one device at the global batch trains.
    training.run(dataclasses.replace(config, batch_size=16), strategy=cpu_strategy(1))
