"""`python -m tf_mgpu.check`: the equivalence proof for the user's own model, and its diagnosis."""

import sys
import textwrap

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.config import Config
from tf_mgpu.tools.equivalence import runner

EXAMPLE = support.ROOT / "examples" / "two_inputs_task.py"


def check_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf_mgpu.check", *args]


@pytest.mark.cluster
def test_the_example_task_is_equivalent_and_its_unsynchronized_variant_is_not(tmp_path):
    variant = tmp_path / "unsynchronized.py"
    variant.write_text(EXAMPLE.read_text().replace("synchronized=True", "synchronized=False"))
    commands = {
        name: (check_command(f"--task={path}"), support.environment())
        for name, path in (("good", EXAMPLE), ("bad", variant))
    }
    finished = support.run_processes(commands, tmp_path / "logs", timeout=240)
    good, bad = finished["good"], finished["bad"]
    assert good.returncode == 0, good.tail()
    assert "model two_inputs  783 parameters  5 steps  float64" in good.stdout, good.tail()
    for label in ("one device ", "2 replicas ", "memory per replica", "XLA ", "randomness off"):
        assert f"  {label}" in good.stdout, good.tail()
    assert "ms/step  test_loss" in good.stdout
    assert "Dropout dropout (rate 0.2)" in good.stdout
    assert "(tolerance 1e-09): EQUIVALENT" in good.stdout, good.tail()

    assert bad.returncode == errors.EXIT_NOT_EQUIVALENT, bad.tail()
    assert "NOT EQUIVALENT" in bad.stdout, bad.tail()
    # Its moving statistics are the replicas' mean after every step (engine/step/replica_state).
    assert "batch_norm                     5.4e-03  <- first to differ in the forward pass" in (
        bad.stdout
    ), bad.tail()
    assert "likely cause: unsynchronized batch statistics: BatchNormalization batch_norm" in (
        bad.stdout
    ), bad.tail()


TASK = """
import keras
import numpy as np
import tensorflow as tf

{extra}

def build_model():
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    {layer}
    outputs = keras.layers.Dense(3, name="out")(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss={loss})
    return model

def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0)
    return (x, y), (x[:64], y[:64])
"""
SCCE = "keras.losses.SparseCategoricalCrossentropy(from_logits=True)"
CENTER = '''
class Center(keras.layers.Layer):
    """Subtracts the batch mean: it reads the batch it is handed."""
    def call(self, x):
        return x - tf.reduce_mean(x, axis=0, keepdims=True)
'''
NOISE = '''
class Noise(keras.layers.Layer):
    """Adds NumPy noise: drawn when the call is traced, outside Keras's seeded ops."""
    def call(self, x):
        return x + tf.constant(np.random.normal(size=(1, x.shape[-1])), x.dtype)
'''
PENALTY = '''
class Penalty(keras.layers.Layer):
    """An add_loss term summed over the batch it is handed (one replica's share)."""
    def call(self, x):
        self.add_loss(0.01 * tf.reduce_sum(tf.square(x)))
        return x
'''
MEAN_LOSS = '''
def mean_loss(y, y_pred):
    """Reduces over the batch itself: one value per batch, not per example."""
    per_example = keras.losses.sparse_categorical_crossentropy(y, y_pred, from_logits=True)
    return tf.reduce_mean(per_example)
'''


@pytest.fixture(autouse=True)
def _fresh_keys():
    support.fresh_collective_keys()  # check builds its own MirroredStrategy, once per process


def write(tmp_path, **parts) -> str:
    path = tmp_path / "task.py"
    fields = {"extra": "", "layer": "", "loss": SCCE, **parts}
    path.write_text(textwrap.dedent(TASK.format(**fields)))
    return str(path)


def test_a_plain_model_is_equivalent(tmp_path):
    outcome = runner.check(Config(task=write(tmp_path), batch_size=8, dtype="float64"), 2, 5)
    assert outcome.equivalent, outcome.text


def test_a_layer_reading_the_per_replica_batch_is_named(tmp_path):
    task = write(tmp_path, extra=CENTER, layer='hidden = Center(name="center")(hidden)')
    outcome = runner.check(Config(task=task, batch_size=8, dtype="float64"), 2, 5)
    assert not outcome.equivalent, outcome.text
    assert "first to differ in the forward pass: center" in outcome.text
    assert "likely cause: layer center computes over the batch it is handed" in outcome.text


def test_a_loss_reduced_over_the_batch_trains_as_on_one_device(tmp_path):
    # Keras adds a loss of one value per batch on each replica as it is (its fit on N
    # replicas steps N times as far); tf_mgpu divides it among the replicas.
    task = write(tmp_path, extra=MEAN_LOSS, loss="mean_loss")
    outcome = runner.check(Config(task=task, batch_size=8, dtype="float64"), 2, 5)
    assert outcome.equivalent, outcome.text


def test_randomness_outside_keras_is_named(tmp_path):
    task = write(tmp_path, extra=NOISE, layer='hidden = Noise(name="noise")(hidden)')
    outcome = runner.check(Config(task=task, batch_size=8, dtype="float64"), 2, 5)
    assert not outcome.equivalent, outcome.text
    assert "likely cause: randomness outside Keras's seeded ops" in outcome.text, outcome.text


def test_an_add_loss_term_reduced_over_the_replica_batch_is_named(tmp_path):
    task = write(tmp_path, extra=PENALTY, layer='hidden = Penalty(name="penalty")(hidden)')
    outcome = runner.check(Config(task=task, batch_size=8, dtype="float64"), 2, 5)
    assert not outcome.equivalent, outcome.text
    assert "first to differ in the forward pass" not in outcome.text, outcome.text
    causes = [line for line in outcome.text.splitlines() if "likely cause:" in line]
    assert len(causes) == 1, outcome.text
    assert "the forward pass agrees but the steps do not: an add_loss term" in causes[0], causes


def test_a_user_error_exits_3_as_a_command(tmp_path):
    # 256 training examples; 100 steps of 2 x 16 need 3,200. The error comes after
    # TensorFlow loads, from check's own run, and still ends as one line and exit 3.
    done = support.run_processes(
        {
            "check": (
                check_command(f"--task={write(tmp_path)}", "--steps=100"),
                support.environment(),
            )
        },
        tmp_path / "logs",
        timeout=120,
    )["check"]
    line = support.assert_one_line_exit(done, errors.EXIT_USER_ERROR, "check needs 3,200")
    assert "lower --steps or --batch_size" in line, line
