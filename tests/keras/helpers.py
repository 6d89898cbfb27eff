"""What the Keras-feature tests share: the ordinary Keras files they train, and comparisons.

The files under tests/keras_files/ (and the `*_task` files of examples/) are written as a user
writes them and know nothing of tf_mgpu. Equivalence runs are in float64, 1 device at a global
batch of 32 against 2 replicas of 16, so they hold on any CPU.
"""

import dataclasses
import inspect
import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.support import ROOT, cpu_strategy
from tests.test_training_tasks import import_file, weights
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import data, stream_batched

FILES = ROOT / "tests" / "keras_files"


EXAMPLES = ROOT / "examples"


FLOAT64 = Config(batch_size=16, epochs=2, seed=3, jit_compile=False, dtype="float64")


def path_of(name: str) -> pathlib.Path:
    """A file of tests/keras_files, or of examples/ (`*_task`)."""
    return (EXAMPLES if name.endswith("_task") else FILES) / f"{name}.py"


def load(name: str, **settings):
    """The file `name` imported under a name of its own, with module constants changed."""
    module = import_file(path_of(name), f"{name}_{abs(hash(repr(settings)))}")
    for key, value in settings.items():
        setattr(module, key, value)
    return module


def one_and_two(task, config: Config = FLOAT64):
    """(the run on one device at twice the batch, the run on 2 replicas)."""
    one = training.run(
        dataclasses.replace(config, batch_size=2 * config.batch_size),
        task,
        strategy=cpu_strategy(1),
    )
    two = training.run(config, task, strategy=cpu_strategy(2))
    return one, two


def assert_same_weights(a, b, atol: float) -> None:
    for x, y, weight in zip(
        weights(a.state.model), weights(b.state.model), a.state.model.weights, strict=True
    ):
        np.testing.assert_allclose(x, y, atol=atol, rtol=0, err_msg=weight.path)


def largest_difference(a, b) -> float:
    return max(
        np.abs(x - y).max()
        for x, y in zip(weights(a.state.model), weights(b.state.model), strict=True)
    )


def strict(path: pathlib.Path) -> list:
    """Every JSON value in `path` (one per line for .jsonl), refusing NaN and Infinity."""

    def refuse(constant):
        raise ValueError(f"{path.name} holds {constant}, which is not JSON")

    lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
    return [json.loads(line, parse_constant=refuse) for line in lines if line.strip()]


def trained_and_exported(name: str, tmp_path: pathlib.Path):
    """The file `name` trained 2 epochs on 2 replicas into tmp_path: (result, its test x)."""
    config = Config(
        task=str(path_of(name)), batch_size=16, epochs=2, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    module = import_file(path_of(name), f"{name}_data")
    (_, _), (x_test, _) = module.load_data()
    return result, x_test


def serve(tmp_path: pathlib.Path, x) -> np.ndarray:
    loaded = tf.saved_model.load(str(tmp_path / "saved_model"))  # held while it serves
    return np.asarray(loaded.serve(tf.constant(x)))


def kill_mid_epoch_then_resume(
    tmp_path, args: list[str], steps_per_epoch: int, after_epochs: int = 0
) -> support.Finished:
    """An uninterrupted run, and one SIGKILLed after a mid-epoch checkpoint (past
    `after_epochs` epochs) and run again: the same final weights. Returns the run again."""
    # Enough epochs that the kill lands long before the end (a save every 8 steps, polled
    # every 20 ms), and no more: each run saves every 8 steps to the end.
    epochs = after_epochs + 8
    common = [*args, f"--epochs={epochs}", "--steps_per_loop=1", "--checkpoint_steps=8"]
    reference = support.run_main([*common, f"--model_dir={tmp_path / 'ref'}"], tmp_path / "r", 300)
    assert reference.returncode == 0, reference.tail()
    model_dir = tmp_path / "run"
    again = [*common, f"--model_dir={model_dir}"]
    support.kill_mid_epoch(again, tmp_path / "logs", model_dir, steps_per_epoch, after_epochs)
    resumed = support.run_main(again, tmp_path / "resumed", 300)
    assert resumed.returncode == 0, resumed.tail()
    assert "tf_mgpu resume: from" in resumed.stdout, resumed.tail()
    assert support.digests(resumed) == support.digests(reference), resumed.tail()
    return resumed


def two_workers_and_one_device(
    tmp_path: pathlib.Path, task: str, epochs: int, dtype: str = "float64", **settings
):
    """`task` trained by 2 real MultiWorkerMirroredStrategy workers at 16 per replica, and in
    this process on one device at 32, both in `dtype` from seed 3 with `settings` (Config
    names, passed to the workers as flags): (the chief's summary.json, the one-device run).
    Both workers must exit 0 holding the same weights."""
    flags = [f"--{key}={value}" for key, value in settings.items()]

    def args(name: str) -> list[str]:
        return [
            f"--task={task}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=16",
            f"--epochs={epochs}",
            "--seed=3",
            "--nojit_compile",
            f"--dtype={dtype}",
            "--startup_timeout=120",
            *flags,
            f"--model_dir={tmp_path / name.replace(':', '_')}",
        ]

    finished = support.run_cluster(
        support.cluster_spec(workers=2), args, tmp_path / "logs", timeout=300
    )
    tails = "\n".join(f.tail() for f in finished.values())
    assert all(f.returncode == 0 for f in finished.values()), tails
    assert support.digests(finished["worker:0"])["workers"] == "2", tails
    (cluster,) = strict(tmp_path / "worker_0" / "summary.json")
    config = Config(
        task=task,
        batch_size=32,
        epochs=epochs,
        seed=3,
        jit_compile=False,
        dtype=dtype,
        **settings,
    )
    return cluster, training.run(config, strategy=cpu_strategy(1))


def built_as_tf_mgpu_builds(task, dtype: str = "float64") -> keras.Model:
    """The task's model on one device in `dtype`, from the weights tf_mgpu starts from (seed
    3, FLOAT64's), for a comparison with Keras's own fit."""
    keras.utils.set_random_seed(3)
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        return task.build_model()
    finally:
        keras.config.set_dtype_policy(policy)


def keras_input(a):
    """An array as Keras's fit and evaluate take it: strings as a tensor (NumPy's unicode
    arrays are refused, "Invalid dtype: str736"; tf_mgpu reads them as they are)."""
    return tf.constant(a) if isinstance(a, np.ndarray) and a.dtype.kind in "US" else a


def keras_fit_in_tf_mgpus_order(
    task, epochs: int, global_batch: int, dtype: str = "float64"
) -> keras.Model:
    """Keras `fit` on one device in `dtype` (`built_as_tf_mgpu_builds`), on the training
    arrays in the order tf_mgpu trains them, in one call as a run is one."""
    x, y, *w = task.load_data()[0]
    examples = len(tf.nest.flatten(x)[0])
    order = np.concatenate([data.epoch_order(examples, 3, e).numpy() for e in range(epochs)])
    model = built_as_tf_mgpu_builds(task, dtype)

    def ordered(part):
        return (
            None if part is None else tf.nest.map_structure(lambda a: keras_input(a[order]), part)
        )

    x, y, w = ordered(x), ordered(y), ordered(w[0] if w else None)
    model.fit(x, y, sample_weight=w, batch_size=global_batch, shuffle=False, verbose=0)
    return model


# What a run's weights are compared with: Keras fit on one device (FIT), tf_mgpu on one device
# (ONE_DEVICE, where Keras fit cannot run it in float64), or nothing (any other word says why).
FIT, ONE_DEVICE = "fit", "one device"


def own_objects(module) -> dict:
    """What a user hands load_model: the functions and classes their file defines."""
    return {
        name: value
        for name, value in vars(module).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }


def keras_evaluate(model: keras.Model, split, batch_size: int) -> dict:
    """Keras's own `evaluate` of `model` on a split as load_data returns it."""
    if isinstance(split, tf.data.Dataset):
        _, batched = stream_batched.unbatched(split)  # a dataset batched for fit stays so
        given = {"x": split if batched else split.batch(batch_size)}
    else:
        names = ("x", "y", "sample_weight")
        given = dict(zip(names, tf.nest.map_structure(keras_input, split), strict=False))
        given["batch_size"] = batch_size
    return model.evaluate(**given, return_dict=True, verbose=0)


RELOADED_AS = {"sparse_categorical_accuracy": "accuracy"}


# The largest weight difference allowed after one epoch: float64 sums in another order than
# one device (1e-16 a step); float32 rounds 1e-7 a step, which Adam's division amplifies.
TOLERANCE = {"float64": 1e-6, "float32": 2e-5}


def trained_like_keras(
    name: str, tmp_path: pathlib.Path, compared: str = FIT, dtype: str = "float64", **settings
):
    """The file `name` trained one epoch on 2 replicas (in `dtype` where compared), exported:
    its `model.keras`, reloaded by Keras, evaluates to the run's test figures, and its
    weights equal Keras fit's (or one device's) on the same examples in the same order.
    Returns the run."""
    compare = compared in (FIT, ONE_DEVICE)
    config = Config(
        task=str(path_of(name)),
        batch_size=16,
        epochs=1,
        seed=3,
        model_dir=str(tmp_path),
        jit_compile=False,
        dtype=dtype if compare else None,
    )
    config = dataclasses.replace(config, **settings)
    result = training.run(config, strategy=cpu_strategy(2))
    task = load(name)
    reloaded = keras.saving.load_model(tmp_path / "model.keras", custom_objects=own_objects(task))
    says = keras_evaluate(reloaded, task.load_data()[-1], result.summary["global_batch"])
    # A KerasHub task compiled with "accuracy" is reloaded with it under its full name (its
    # own compile; Keras's save and load of the model do the same without tf_mgpu).
    figures = {k[len("test_") :]: v for k, v in result.summary.items() if k.startswith("test_")}
    says = {
        key if key in figures else RELOADED_AS.get(key, key): value for key, value in says.items()
    }
    assert set(says) <= set(figures), (says, figures)
    for key, value in says.items():
        assert figures[key] == pytest.approx(value, abs=1e-5), key
    if compared == FIT:
        fitted = keras_fit_in_tf_mgpus_order(task, 1, result.summary["global_batch"], dtype)
        other = fitted.weights
    elif compared == ONE_DEVICE:
        one = dataclasses.replace(
            config, batch_size=2 * config.batch_size, model_dir=str(tmp_path / "one")
        )
        other = training.run(one, strategy=cpu_strategy(1)).state.model.weights
    else:
        return result
    for a, b in zip(result.state.model.weights, other, strict=True):
        # Keras keeps the learning rate and its optimizer's constants in float32: 1e-8 seen.
        atol = TOLERANCE[dtype]
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=atol, rtol=0, err_msg=a.path)
    return result
