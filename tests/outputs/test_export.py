"""The export is the trained model: Keras's own save of it (every layer's config and dtype, its
state, the optimizer's state), so `load_model` then `fit` continues the run; a float32 copy
only where training ran in float64 or a mixed policy, and never of an integer layer."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import load, own_objects, path_of, strict, trained_like_keras
from tests.support import ROOT, cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import data


def test_an_integer_output_layer_keeps_its_dtype_in_a_float64_runs_export(tmp_path):
    trained_like_keras("hashing_int", tmp_path)
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    hashing = [x for x in reloaded.layers if isinstance(x, keras.layers.Hashing)]
    assert hashing[0].dtype_policy.name == "int64", hashing[0].dtype_policy
    dense = [x for x in reloaded.layers if isinstance(x, keras.layers.Dense)]
    assert dense[0].dtype_policy.name == "float32"  # the float64 run's float32 copy
    assert int(reloaded.optimizer.iterations.numpy()) == 128 // 32


def ordered(task, epochs: range):
    """The training arrays in tf_mgpu's order for `epochs` (seed 3), as Keras's fit takes them."""
    (x, y), _ = task.load_data()
    order = np.concatenate([data.epoch_order(len(x), 3, e).numpy() for e in epochs])
    return tf.constant(x[order]), y[order]


def test_load_model_then_fit_continues_the_run(tmp_path):
    name = "hashing_int"
    config = Config(
        task=str(path_of(name)), batch_size=32, epochs=1, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(dataclasses.replace(config, jit_compile=False), strategy=cpu_strategy(1))
    task = load(name)
    reloaded = keras.saving.load_model(tmp_path / "model.keras", custom_objects=own_objects(task))
    assert int(reloaded.optimizer.iterations.numpy()) == 4
    trained = result.state.optimizer.variables
    for mine, its in zip(trained, reloaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.asarray(mine.numpy()), its.numpy(), err_msg=mine.path)
    # One more epoch with Keras's own fit, from the export...
    reloaded.fit(*ordered(task, range(1, 2)), batch_size=32, shuffle=False, verbose=0)
    # ...ends where Keras's fit of both epochs from the same start ends.
    keras.utils.set_random_seed(3)
    whole = task.build_model()
    whole.fit(*ordered(task, range(2)), batch_size=32, shuffle=False, verbose=0)
    for a, b in zip(reloaded.weights, whole.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=a.path)


GIB = 2**30


def folder_bytes(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@pytest.mark.cluster
def test_a_gigabyte_of_state_ends_on_two_workers_at_a_checkpoints_cost(tmp_path):
    """A frozen table of 1 GB (2M x 128 float32) under a small head, on 2 real workers: the
    end of the run (weights agreement, summary, model.weights.h5, model.keras, saved_model/)
    holds at most one more copy of the state than training did, and writes each format once,
    the size of the state (Keras's own SavedModel export stores every variable twice)."""
    task = ROOT / "tests" / "keras_files" / "frozen_table.py"

    def args(name: str) -> list[str]:
        return [
            f"--task={task}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=64",
            "--epochs=1",
            "--startup_timeout=300",
            f"--model_dir={tmp_path / name.replace(':', '_')}",
        ]

    finished = support.run_cluster(
        support.cluster_spec(workers=2), args, tmp_path / "logs", timeout=900
    )
    tails = "\n".join(f.tail() for f in finished.values())
    assert all(f.returncode == 0 for f in finished.values()), tails
    chief = tmp_path / "worker_0"
    (summary,) = strict(chief / "summary.json")
    state = 2_000_000 * 128 * 4
    grown = (summary["peak_host_memory_mib"] - summary["peak_host_memory_training_mib"]) * 2**20
    assert grown <= 1.1 * state, (grown / GIB, summary["peak_host_memory_mib"])
    for path in (chief / "model.keras", chief / "model.weights.h5", chief / "saved_model"):
        written = path.stat().st_size if path.is_file() else folder_bytes(path)
        assert state <= written <= 1.1 * state, (path.name, written / GIB)
