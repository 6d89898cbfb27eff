"""Loss weights, and models with several outputs: a loss per output, loss weights and
metrics per output, labels as a dict or a list, arrays or a tf.data.Dataset, on replicas and
in every file the run writes."""

import dataclasses
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import (
    FLOAT64,
    assert_same_weights,
    load,
    one_and_two,
    path_of,
    serve,
    strict,
    trained_and_exported,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError

# 256 test examples over a global batch of 2 x 48: the last batch is padded.
PADDED = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
KERAS_NAMES = {"loss", "price_loss", "sold_loss", "price_mae", "sold_auc", "sold_accuracy"}


def test_the_outputs_are_named_as_keras_evaluate_names_them():
    """The names tf_mgpu writes everywhere are those Keras gives for the same model."""
    task = load("two_heads")
    (_, _), (x_test, y_test) = task.load_data()
    model = task.build_model()
    said = model.evaluate(x_test, y_test, batch_size=256, return_dict=True, verbose=0)
    assert set(said) == KERAS_NAMES


def as_list(task):
    """The task with its labels given as a list of arrays, in the outputs' order."""
    given = task.load_data

    def load_data():
        (x, y), (x_test, y_test) = given()
        return (x, [y["price"], y["sold"]]), (x_test, [y_test["price"], y_test["sold"]])

    task.load_data = load_data
    return task


def dict_outputs(task):
    """The task's model returning a dict of outputs, compiled with lists in their order."""

    def build_model():
        features = keras.Input((12,), name="features")
        hidden = keras.layers.Dense(16, activation="relu")(features)
        outputs = {
            "price": keras.layers.Dense(1, name="price")(hidden),
            "sold": keras.layers.Dense(1, activation="sigmoid", name="sold")(hidden),
        }
        model = keras.Model(features, outputs)
        model.compile(
            optimizer=keras.optimizers.SGD(0.1),
            loss=["mse", "binary_crossentropy"],  # the outputs' order: their names, sorted
            loss_weights=[0.25, 1.0],
            metrics=[["mae"], ["auc", "accuracy"]],
        )
        return model

    task.build_model = build_model
    return task


def streamed(task):
    """The task with both splits given as tf.data.Datasets of (x, {name: label}) elements."""
    given = task.load_data

    def load_data():
        return tuple(tf.data.Dataset.from_tensor_slices(split) for split in given())

    task.load_data = load_data
    return task


@pytest.mark.parametrize(
    "settings",
    [{}, {"input": "stream"}, {"accumulation_steps": 2}],
    ids=["resident", "stream", "accumulated"],
)
def test_two_heads_on_two_replicas_equal_one_device(settings):
    one, two = one_and_two(load("two_heads"), dataclasses.replace(FLOAT64, **settings))
    assert_same_weights(one, two, atol=1e-10)
    for name in KERAS_NAMES:
        for split in ("train", "test"):
            key = f"{split}_{name}"
            assert two.summary["history"][-1][key] == pytest.approx(
                one.summary["history"][-1][key], abs=1e-9
            ), key
    assert two.summary["test_sold_auc"] > 0.8, "the binary head did not learn"


@pytest.mark.parametrize(
    "form",
    [load, lambda name: as_list(load(name)), lambda name: dict_outputs(load(name))],
    ids=["dict_labels", "list_labels", "dict_outputs"],
)
def test_every_test_figure_equals_keras_evaluate_on_two_replicas(form):
    task = form("two_heads")
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    figures = {
        key.removeprefix("test_"): value
        for key, value in result.summary.items()
        if key.startswith("test_") and key != "test_examples"
    }
    assert set(figures) == set(keras_says) == KERAS_NAMES
    for name, value in keras_says.items():
        assert figures[name] == pytest.approx(value, abs=1e-6), name


def test_a_streamed_dataset_of_dict_labels_trains_like_arrays():
    one, two = one_and_two(streamed(load("two_heads")))
    assert_same_weights(one, two, atol=1e-10)
    (_, _), (x_test, y_test) = load("two_heads").load_data()
    keras_says = two.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name, value in keras_says.items():
        assert two.summary[f"test_{name}"] == pytest.approx(value, abs=1e-6), name
    arrays = training.run(FLOAT64, load("two_heads"), strategy=cpu_strategy(2))
    assert two.summary["test_sold_auc"] == pytest.approx(arrays.summary["test_sold_auc"], abs=0.05)


def test_every_file_names_each_output_as_keras_does(tmp_path):
    config = dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path))
    training.run(config, load("two_heads"), strategy=cpu_strategy(2))
    expected = {f"{split}_{name}" for split in ("train", "test") for name in KERAS_NAMES}
    (summary,) = strict(tmp_path / "summary.json")
    assert expected <= {*summary, *summary["history"][-1]}, sorted(summary)
    (record,) = strict(tmp_path / "metrics.jsonl")
    assert expected <= set(record), sorted(record)
    tags = {
        value.tag
        for path in (tmp_path / "tensorboard" / "test").glob("*tfevents*")
        for event in tf.compat.v1.train.summary_iterator(str(path))
        for value in event.summary.value
    }
    assert {f"epoch_{name}" for name in KERAS_NAMES} <= tags, sorted(tags)


def test_exports_reload_with_both_heads_and_evaluate_reports_every_figure(tmp_path):
    result, x = trained_and_exported("two_heads", tmp_path)
    trained = [np.asarray(t) for t in result.state.model(tf.constant(x), training=False)]
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    for got, want in zip(reloaded(tf.constant(x)), trained, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)
    for got, want in zip(serve(tmp_path, x), trained, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)
    (_, _), (x_test, y_test) = load("two_heads").load_data()
    # The reloaded model is compiled as trained: its loss weights too.
    keras_says = reloaded.evaluate(x_test, y_test, batch_size=256, return_dict=True, verbose=0)
    assert keras_says["loss"] == pytest.approx(result.summary["test_loss"], abs=1e-5)
    command = [
        sys.executable,
        "-m",
        "tf_mgpu.evaluate",
        f"--task={path_of('two_heads')}",
        f"--model={tmp_path}",
        "--strategy=mirrored",
        "--num_cpu_devices=2",
        "--batch_size=48",
    ]
    finished = support.run_processes(
        {"evaluate": (command, support.environment())},
        tmp_path / "logs",
        timeout=120,
    )["evaluate"]
    assert finished.returncode == 0, finished.tail()
    (line,) = [s for s in finished.stdout.splitlines() if s.startswith("tf_mgpu evaluate:")]
    for name in sorted(KERAS_NAMES):
        shown = "acc" if name == "accuracy" else name
        assert f"test_{shown} {result.summary[f'test_{name}']:.4f}" in line, (name, line)


def with_data(name: str, change):
    """The file `name` with load_data's result passed through `change`."""
    task = load(name)
    given = task.load_data
    task.load_data = lambda: change(*given())
    return task


def renamed(train, test):
    def sell(y):
        return {"price": y["price"], "sell": y["sold"]}

    return (train[0], sell(train[1])), (test[0], sell(test[1]))


def test_a_dict_of_labels_keyed_unlike_the_outputs_is_one_line_exit_3(tmp_path):
    with pytest.raises(UserError) as raised:
        training.run(FLOAT64, with_data("two_heads", renamed), strategy=cpu_strategy(1))
    assert str(raised.value).endswith(
        "load_data's y is a dict keyed price, sell, but the model's outputs are named "
        "price, sold; key y by the outputs' names"
    ), raised.value
    task = tmp_path / "renamed.py"
    text = path_of("two_heads").read_text()
    task.write_text(
        text.replace('y = {"price": price, "sold": sold}', 'y = {"price": price, "sell": sold}')
    )
    assert task.read_text() != text
    model_dir = tmp_path / "model"
    finished = support.run_main(
        [f"--task={task}", "--epochs=1", f"--model_dir={model_dir}"], tmp_path / "logs", 120
    )
    support.assert_one_line_exit(finished, 3, "key y by the outputs' names")
    assert not (model_dir / "summary.json").exists()


def _labels(y, **changed):
    return {**y, **changed}


@pytest.mark.parametrize(
    ("name", "change", "said"),
    [
        (
            "two_heads_task",
            lambda tr, te: ((tr[0], _labels(tr[1], kind=tr[1]["kind"] + 2)), te),
            r"y_train\['kind'\] holds labels from 2 to 4, but the model outputs 3 classes",
        ),
        (
            "two_heads_task",
            lambda tr, te: (tr, (te[0], _labels(te[1], kind=te[1]["kind"] - 1))),
            r"y_test\['kind'\] holds labels from -1 to 1",
        ),
        (
            "two_heads",
            lambda tr, te: (
                (tr[0], _labels(tr[1], price=np.where(tr[0][:, 0] > 2, np.nan, tr[1]["price"]))),
                te,
            ),
            r"y_train\['price'\] holds \d+ non-finite values",
        ),
        (
            "two_heads",
            lambda tr, te: (tr, (te[0], _labels(te[1], price=te[1]["price"][:, None, None]))),
            r"the test split's examples are shaped .* the training split's",
        ),
        (
            "two_heads",
            lambda tr, te: ((tr[0], tr[1]["sold"]), (te[0], te[1]["sold"])),
            r"the model has 2 outputs \(price, sold\), but load_data's y is one array",
        ),
        (
            "two_heads",
            lambda tr, te: ((tr[0], [tr[1]["sold"]] * 3), (te[0], [te[1]["sold"]] * 3)),
            r"y is a tuple of 3 label arrays, but the model has 2 outputs \(price, sold\)",
        ),
        (
            "two_heads",
            lambda tr, te: ((tr[0], _labels(tr[1], sold=tr[1]["sold"][:10])), te),
            r"y_train\['sold'\] has 10 rows but y_train\['price'\] has 1024",
        ),
    ],
    ids=["sparse_train", "sparse_test", "nan", "test_shape", "one_array", "three_arrays", "rows"],
)
def test_labels_that_do_not_fit_the_outputs_are_one_line(name, change, said):
    with pytest.raises(UserError, match=said):
        training.run(FLOAT64, with_data(name, change), strategy=cpu_strategy(1))


def test_a_streamed_split_is_checked_per_output():
    def shifted(train, test):
        (x, y), (x_test, y_test) = train, test
        kinds = _labels(y_test, kind=y_test["kind"] + 1)
        return (x, y), tf.data.Dataset.from_tensor_slices((x_test, kinds))

    # Of known length, so checked as read: the first bad example is named.
    said = r"the test dataset's example \d+ has a label for output 'kind' outside the model's 3"
    with pytest.raises(UserError, match=said):
        training.run(FLOAT64, with_data("two_heads_task", shifted), strategy=cpu_strategy(1))


def recompiled(**compile_args):
    task = load("two_heads")
    build = task.build_model

    def build_model():
        model = build()
        model.compile(optimizer="sgd", **compile_args)
        return model

    task.build_model = build_model
    return task


@pytest.mark.parametrize(
    ("compile_args", "said"),
    [
        ({"loss": {"price": "mse", "sell": "mse"}}, "compile's loss is a dict keyed price, sell"),
        ({"loss": ["mse"] * 3}, "compile's loss is a list of 3, but the model has 2 outputs"),
        ({"loss": "mse", "metrics": ["mae"]}, "does not say which of the model's 2 outputs"),
        ({"loss": "mse", "loss_weights": {"price": 1.0}}, "compile's loss_weights is a dict"),
    ],
    ids=["loss_keys", "loss_count", "flat_metrics", "weight_keys"],
)
def test_compile_arguments_that_do_not_fit_the_outputs_are_one_line(compile_args, said):
    with pytest.raises(UserError, match=said):
        training.run(FLOAT64, recompiled(**compile_args), strategy=cpu_strategy(1))


def test_class_weights_are_refused_for_several_outputs():
    task = load("two_heads", CLASS_WEIGHT={0: 1.0, 1: 2.0})
    with pytest.raises(UserError, match="CLASS_WEIGHT applies to a model with one output"):
        training.run(FLOAT64, task, strategy=cpu_strategy(1))


def test_one_output_with_a_loss_weight_reports_the_loss_keras_reports():
    task = load("binary_auc")
    build = task.build_model

    def build_model():
        model = build()
        model.compile(optimizer="sgd", loss="binary_crossentropy", loss_weights=3.0)
        return model

    task.build_model = build_model
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    assert result.summary["test_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
