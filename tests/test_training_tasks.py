"""The engine's guarantees over several tasks, not only the built-in MLP.

mnist_mlp (dense, no randomness), mnist_cnn (convolutions, dropout) and
examples/two_inputs_task.py (a dict x, an L2 regularizer, synchronized
BatchNormalization, dropout), as their authors wrote them; the last also with its
data given as a tf.data.Dataset, streamed. Equivalence runs
with SGD (Adam would hide a gradient scaled by the replica count), dropout
off, no XLA on either side, in float64 so it holds on any CPU.
"""

import dataclasses
import importlib.util
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import ROOT, cpu_strategy, subset
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import stream
from tf_mgpu.engine.input.data import Data, Split
from tf_mgpu.engine.state import training_state as engine_state
from tf_mgpu.tasks import adapter, mnist_cnn, mnist_mlp

TASKS = ["mnist_mlp", "mnist_cnn", "two_inputs", "two_inputs_streamed"]
TWO_INPUTS = ROOT / "examples" / "two_inputs_task.py"


def import_file(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CnnWithSgd:
    """mnist_cnn as written, recompiled with SGD, its dropout on or off."""

    def __init__(self, dropout: bool):
        self.dropout = dropout

    def build_model(self):
        model = mnist_cnn.build_model()
        for layer in model.layers:
            if isinstance(layer, keras.layers.Dropout) and not self.dropout:
                layer.rate = 0.0
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss=model.loss, metrics=["accuracy"])
        return model

    def load_data(self):
        raise AssertionError("the tests hand the data over")


def task_and_data(name: str, mnist: Data, train: int, test: int, dropout: bool):
    """(the task, its data): `train` and `test` examples."""
    if name == "mnist_mlp":
        return mnist_mlp, subset(mnist, train, test)
    if name == "mnist_cnn":

        def prepare(split: Split) -> Split:
            x = np.expand_dims(split.x.astype("float32") / 255, -1)
            return Split(x, keras.utils.to_categorical(split.y, 10))

        part = subset(mnist, train, test)
        return CnnWithSgd(dropout), Data(prepare(part.train), prepare(part.test))
    module = import_file(TWO_INPUTS, f"two_inputs_{train}_{dropout}")
    if not dropout:
        module.DROPOUT = 0.0
    whole = adapter.to_data(module.load_data(), "two_inputs")
    part = Data(whole.train.take(slice(0, train)), whole.test.take(slice(0, test)))
    if name == "two_inputs_streamed":  # as a tf.data.Dataset, read as training goes
        part = adapter.to_data(
            [
                tf.data.Dataset.from_tensor_slices((split.x, split.y))
                for split in (part.train, part.test)
            ],
            "two_inputs_streamed",
        )
        assert isinstance(part.train, stream.Stream)
    return module, part


def weights(model) -> list[np.ndarray]:
    return [np.array(w.numpy()) for w in model.weights]


def replica_copies(variable) -> list[np.ndarray]:
    mirrored = variable.value if isinstance(variable, keras.Variable) else variable
    return [np.array(copy.numpy()) for copy in mirrored.values]


@pytest.mark.parametrize("name", TASKS)
def test_replicas_end_bit_identical_with_dropout_on(mnist, name):
    task, datasets = task_and_data(name, mnist, 256, 64, dropout=True)
    config = Config(batch_size=16, epochs=1, seed=2, jit_compile=False)
    result = training.run(config, task, strategy=cpu_strategy(2), datasets=datasets)
    for variable in result.state.variables():
        first, second = replica_copies(variable)
        np.testing.assert_array_equal(first, second, getattr(variable, "path", variable.name))


@pytest.mark.parametrize("name", TASKS)
def test_two_replicas_train_like_one_device_in_float64(mnist, name):
    # 20 steps of a global batch of 32, on 327 examples: a remainder is dropped on both sides.
    task, datasets = task_and_data(name, mnist, 327, 200, dropout=False)
    two = Config(
        batch_size=16, epochs=2, learning_rate=0.1, seed=5, jit_compile=False, dtype="float64"
    )
    one = dataclasses.replace(two, batch_size=32)
    sample = datasets.train.take(slice(0, 2))
    initial = weights(
        engine_state.create_state(cpu_strategy(1), one, adapter.load(task), sample).model
    )
    reference = training.run(one, task, strategy=cpu_strategy(1), datasets=datasets)
    moved = max(
        np.abs(a - b).max() for a, b in zip(weights(reference.state.model), initial, strict=True)
    )
    assert moved > 1e-2, "training barely changed the weights: the comparison proves nothing"
    replicated = training.run(two, task, strategy=cpu_strategy(2), datasets=datasets)
    assert replicated.summary["global_batch"] == reference.summary["global_batch"] == 32
    for a, b, weight in zip(
        weights(replicated.state.model),
        weights(reference.state.model),
        replicated.state.model.weights,
        strict=True,
    ):
        assert a.dtype == np.float64, weight.path
        np.testing.assert_allclose(a, b, atol=1e-10, rtol=0, err_msg=weight.path)
    assert replicated.summary["test_loss"] == pytest.approx(
        reference.summary["test_loss"], abs=1e-10
    )


@pytest.mark.parametrize("name", TASKS)
def test_test_metrics_are_what_keras_evaluate_says_on_the_same_weights(mnist, name):
    # 1,000 test examples over a global batch of 32: the last batch is partial.
    task, datasets = task_and_data(name, mnist, 256, 1000, dropout=True)
    config = Config(batch_size=16, epochs=1, seed=1, jit_compile=False)
    result = training.run(config, task, strategy=cpu_strategy(2), datasets=datasets)
    record = adapter.load(task)
    test = stream.materialized(datasets).test
    x = test.x
    x = {k: v for k, v in x.items()} if isinstance(x, dict) else np.asarray(record.preprocess(x))
    keras_says = result.state.model.evaluate(x, test.y, batch_size=100, return_dict=True, verbose=0)
    assert result.summary["test_examples"] == 1000
    assert result.summary["test_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
    assert result.summary["test_accuracy"] == pytest.approx(keras_says["accuracy"], abs=1e-6)


def test_unsynchronized_batch_norm_gets_one_warning_and_really_differs(mnist, tmp_path, capsys):
    text = TWO_INPUTS.read_text()
    assert "BatchNormalization(synchronized=True)" in text
    variant = tmp_path / "unsynchronized.py"
    variant.write_text(text.replace("synchronized=True", "synchronized=False"))
    task, datasets = import_file(variant, "unsynchronized"), None
    task.DROPOUT = 0.0
    whole = adapter.to_data(task.load_data(), "unsynchronized")
    datasets = Data(whole.train.take(slice(0, 320)), whole.test.take(slice(0, 100)))
    two = Config(batch_size=16, epochs=1, seed=5, jit_compile=False, dtype="float64")
    replicated = training.run(two, task, strategy=cpu_strategy(2), datasets=datasets)
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert warnings == [
        "tf_mgpu warning: BatchNormalization batch_norm normalises each replica's 16 "
        "examples with their own statistics, not the global batch's 32, so 2 replicas do not "
        "train like one device; build it with keras.layers.BatchNormalization(synchronized=True), "
        "or pass --sync_batch_norm"
    ]
    one = dataclasses.replace(two, batch_size=32)
    reference = training.run(one, task, strategy=cpu_strategy(1), datasets=datasets)
    assert "warning" not in capsys.readouterr().out
    assert abs(replicated.summary["test_loss"] - reference.summary["test_loss"]) > 1e-4
