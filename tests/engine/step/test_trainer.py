"""The trainer's compiled loops: compiling runs no step and changes nothing."""

import keras
import numpy as np

from tests.support import cpu_strategy
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.input import data
from tf_mgpu.engine.step import trainer
from tf_mgpu.engine.task import Task


def dense_dropout_task() -> Task:
    def build_model():
        model = keras.Sequential(
            [keras.Input((16,)), keras.layers.Dropout(0.5), keras.layers.Dense(4)]
        )
        model.compile(optimizer="sgd", loss="mse")
        return model

    return Task(name="dense", where="dense", build_model=build_model, load_data=None)


def test_compile_runs_no_step_and_changes_nothing():
    # A dense task with dropout, on 2 replicas, fed resident and streamed.
    rng = np.random.default_rng(0)
    split = data.Split(rng.normal(size=(64, 16)).astype(np.float32), np.zeros((64, 4), np.float32))
    for input_kind in ("resident", "stream"):
        config = Config(seed=3, batch_size=8, epochs=1, input=input_kind, jit_compile=False)
        task = dense_dropout_task()
        run = trainer.Trainer(cpu_strategy(2), config, task, data.Data(split, split))
        before = [np.array(v.numpy()) for v in run.state.variables()]
        assert run.compile() > 0
        after = [np.array(v.numpy()) for v in run.state.variables()]
        assert run.step() == 0, input_kind
        assert run.call_seconds == 0.0, input_kind
        for a, b in zip(before, after, strict=True):
            np.testing.assert_array_equal(a, b)
        run.train_epoch()
        assert run.step() == 4, input_kind  # 64 examples at a global batch of 16


class Flagged(keras.layers.Layer):
    """A layer holding a boolean weight beside its float one."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(), initializer="ones")
        self.seen = self.add_weight(shape=(), dtype="bool", initializer="zeros", trainable=False)

    def call(self, x):
        return x * self.scale


def test_the_finiteness_check_and_the_digest_take_integer_and_boolean_weights():
    # An adapted Normalization holds an int64 count; is_finite refuses anything not a float.
    rng = np.random.default_rng(0)
    split = data.Split(rng.normal(size=(64, 16)).astype(np.float32), np.zeros((64, 4), np.float32))

    def build_model():
        normalizer = keras.layers.Normalization()
        normalizer.adapt(split.x)
        model = keras.Sequential([keras.Input((16,)), normalizer, Flagged(), keras.layers.Dense(4)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    task = Task(name="flags", where="flags", build_model=build_model, load_data=None)
    config = Config(seed=3, batch_size=8, epochs=1, jit_compile=False)
    run = trainer.Trainer(cpu_strategy(2), config, task, data.Data(split, split))
    assert {w.dtype for w in run.state.model.weights} == {"float32", "int64", "bool"}
    assert run.weights_finite()
    assert len(collectives.weights_digest(run.state.model)) == 64
    kernel = run.state.model.layers[-1].kernel
    kernel.assign(np.full(kernel.shape, np.nan, np.float32))
    assert not run.weights_finite()
