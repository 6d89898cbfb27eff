"""Variables a model updates on each replica (BatchNormalization's moving statistics, a count
of the user's own) stay one model: the same on every replica after every step, so the run's
test figures are those of the exported model, and the run says what it did with them."""

import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import path_of, trained_like_keras
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config


def components(variable) -> list[np.ndarray]:
    value = getattr(variable, "value", variable)
    parts = value.values if isinstance(value, tf.distribute.DistributedValues) else [value]
    return [np.asarray(part.numpy()) for part in parts]


def test_batch_norm_statistics_agree_and_the_summary_is_the_exported_models(tmp_path):
    # 72 test examples at 32 per replica: a padded last step, evaluated on each replica.
    result = trained_like_keras(
        "batch_norm_convnet", tmp_path, "BatchNormalization normalises each share", batch_size=32
    )
    model = result.state.model
    moving = [w for w in model.weights if "moving" in w.path]
    assert moving
    assert {id(w) for w in moving} <= {id(v) for v in result.state.per_replica}
    for weight in moving:
        first, *others = components(weight)
        for other in others:
            np.testing.assert_array_equal(first, other, err_msg=weight.path)


def test_a_layers_own_count_is_named_and_kept_as_the_replicas_mean(tmp_path, capsys):
    config = Config(
        task=str(path_of("examples_seen")), batch_size=16, epochs=1, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    said = [s for s in capsys.readouterr().out.splitlines() if s.startswith("tf_mgpu state:")]
    assert said == [
        "tf_mgpu state: each replica updates fade_in's seen in its step from its own 16 "
        "examples; after every step tf_mgpu sets it to the mean over the 2 replicas, as a "
        "running statistic of the global batch would be (a count of examples ends at 1/2 of "
        "one device's)"
    ]
    (seen,) = [w for w in result.state.model.weights if w.path == "fade_in/seen"]
    assert [float(c) for c in components(seen)] == [64.0, 64.0]  # 128 examples, half each


@pytest.mark.parametrize("name", ["examples_seen"])
def test_check_names_the_layer_whose_state_each_replica_updates(tmp_path, name):
    done = support.run_processes(
        {
            "check": (
                [
                    sys.executable,
                    "-m",
                    "tf_mgpu.check",
                    f"--task={path_of(name)}",
                    "--batch_size=16",
                    "--steps=4",
                ],
                support.environment(),
            )
        },
        tmp_path / "logs",
        300,
    )["check"]
    assert done.returncode == 4, done.tail()
    assert "likely cause: state updated on each replica: fade_in's seen" in done.stdout, done.tail()
