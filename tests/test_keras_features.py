"""Keras features a user's own file brings, trained as that file is written (tests/keras_files/).

Each test runs the real engine on an ordinary Keras file that knows nothing of
tf_mgpu. Equivalence runs are in float64, 1 device at a global batch of 32
against 2 replicas of 16, so they hold on any CPU.
"""

import dataclasses
import json
import pathlib
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import support
from tests.support import ROOT, cpu_strategy
from tests.test_training_tasks import import_file, replica_copies, weights
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter

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


@pytest.mark.parametrize(
    "clip", [{"clipnorm": 0.05}, {"global_clipnorm": 0.05}, {"clipvalue": 0.002}], ids=str
)
def test_clipping_acts_on_the_global_gradient_so_two_replicas_equal_one_device(clip):
    one, two = one_and_two(load("adamw_clip", CLIP=clip))
    unclipped = training.run(
        dataclasses.replace(FLOAT64, batch_size=32),
        load("adamw_clip", CLIP={}),
        strategy=cpu_strategy(1),
    )
    assert largest_difference(one, unclipped) > 1e-3, "the clip never acted: this proves nothing"
    assert_same_weights(one, two, atol=1e-10)


def test_a_loss_scale_optimizer_on_float32_trains_exactly_as_its_inner_optimizer():
    # The scale is a power of two: scaling and unscaling a float32 gradient is exact.
    config = dataclasses.replace(FLOAT64, dtype="float32")
    scaled = training.run(config, load("loss_scale_sgd"), strategy=cpu_strategy(2))
    plain = training.run(config, load("loss_scale_sgd", LOSS_SCALE=False), strategy=cpu_strategy(2))
    assert scaled.summary["weights_sha256"] == plain.summary["weights_sha256"]
    assert scaled.summary["test_accuracy"] > 0.8
    assert scaled.summary["learning_rate"] == pytest.approx(0.1)
    held = [v.path for v in scaled.state.checkpointed()["optimizer"]]
    assert any("dynamic_scale" in path for path in held), held


def test_loss_scaling_skips_overflowing_steps_agreed_by_every_replica_and_counts_steps():
    # float16 overflows at 65,504: a scale of 2**40 overflows every gradient at first,
    # so the optimizer skips steps and halves the scale until they fit.
    class Overflowing:
        def __init__(self):
            self.file = load("mixed16_in_build")
            self.load_data = self.file.load_data

        def build_model(self):
            model = self.file.build_model()
            model.compile(
                optimizer=keras.optimizers.LossScaleOptimizer(
                    keras.optimizers.SGD(0.1), initial_scale=2.0**40
                ),
                loss=model.loss,
                metrics=["accuracy"],
            )
            return model

    config = Config(batch_size=16, epochs=3, seed=3, jit_compile=False)
    result = training.run(config, Overflowing(), strategy=cpu_strategy(2))
    optimizer = result.state.optimizer
    steps = 3 * (1024 // 32)
    assert result.summary["dtype"] == "mixed_float16"
    assert 0 < float(optimizer.dynamic_scale.numpy()) < 2.0**40, "no step was skipped"
    skipped = steps - int(optimizer.iterations.numpy())
    assert 0 < skipped < steps, f"{skipped} of {steps} steps skipped"
    assert int(result.state.steps.numpy()) == steps, "a skipped step still takes its batch"
    assert result.summary["test_accuracy"] > 0.6
    for variable in result.state.variables():
        first, second = replica_copies(variable)
        np.testing.assert_array_equal(first, second, getattr(variable, "path", variable.name))


def test_mixed_float16_set_in_build_model_learns_on_two_replicas():
    config = Config(batch_size=16, epochs=3, seed=3, jit_compile=False)
    mixed = training.run(config, load("mixed16_in_build"), strategy=cpu_strategy(2))
    assert mixed.summary["dtype"] == "mixed_float16"
    assert isinstance(mixed.state.optimizer, keras.optimizers.LossScaleOptimizer)
    assert mixed.summary["learning_rate"] == pytest.approx(0.1)
    assert mixed.summary["test_accuracy"] > 0.75  # chance is 1/3; float32 reaches 0.79 here


def test_a_policy_set_at_the_top_of_the_file_is_the_runs_unless_dtype_says_otherwise():
    path = str(FILES / "mixed16_at_top.py")
    assert adapter.load(path).dtype == "mixed_float16"
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False)
    result = training.run(dataclasses.replace(config, task=path), strategy=cpu_strategy(1))
    assert result.summary["dtype"] == "mixed_float16"
    assert result.state.model.layers[0].compute_dtype == "float16"
    assert keras.config.dtype_policy().name == "float32", "the task's policy outlived its run"
    forced = dataclasses.replace(config, task=path, dtype="float32")
    result = training.run(forced, strategy=cpu_strategy(1))
    assert result.summary["dtype"] == "float32"


def strict(path: pathlib.Path) -> list:
    """Every JSON value in `path` (one per line for .jsonl), refusing NaN and Infinity."""

    def refuse(constant):
        raise ValueError(f"{path.name} holds {constant}, which is not JSON")

    lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
    return [json.loads(line, parse_constant=refuse) for line in lines if line.strip()]


def test_a_schedule_trains_and_every_file_written_is_strict_json(tmp_path):
    config = Config(batch_size=16, epochs=2, seed=3, model_dir=str(tmp_path))
    training.run(config, load("adam_decay"), strategy=cpu_strategy(2))
    written = sorted(tmp_path.rglob("*.json")) + sorted(tmp_path.rglob("*.jsonl"))
    assert {p.name for p in written} >= {"summary.json", "metrics.jsonl"}
    for path in written:
        strict(path)
    (summary,) = strict(tmp_path / "summary.json")
    schedule = summary["learning_rate_schedule"]
    assert schedule["class_name"] == "ExponentialDecay"
    assert schedule["config"]["decay_steps"] == 10
    assert summary["learning_rate"] is None  # no single peak: the schedule says it all


def test_a_task_that_runs_tensorflow_at_import_trains_on_logical_devices(tmp_path):
    done = support.run_main(
        [
            f"--task={FILES / 'tf_object_at_import.py'}",
            "--num_cpu_devices=2",
            "--epochs=1",
            "--batch_size=32",
            f"--model_dir={tmp_path / 'model'}",
        ],
        tmp_path / "logs",
        180,
    )
    assert done.returncode == 0, done.tail()
    assert "replicas=2" in done.stdout, done.tail()


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


@pytest.mark.parametrize("name", ["subclassed", "text_classifier_task"])
def test_model_keras_and_saved_model_reload_with_the_trained_predictions(name, tmp_path):
    result, x = trained_and_exported(name, tmp_path)
    trained = np.asarray(result.state.model(tf.constant(x), training=False))
    assert result.summary["exports"] == [
        str(tmp_path / "model.keras"),
        str(tmp_path / "saved_model"),
    ]
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(np.asarray(reloaded(tf.constant(x))), trained, atol=1e-6)
    np.testing.assert_allclose(serve(tmp_path, x), trained, atol=1e-6)


def test_a_model_keras_cannot_rebuild_gets_a_saved_model_and_one_line(tmp_path, capsys):
    result, x = trained_and_exported("subclassed_opaque", tmp_path)
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if line.startswith("tf_mgpu export:")]
    assert lines == [
        "tf_mgpu export: Stack cannot be rebuilt from its config (Object Stack was created by "
        "passing non-serializable argument values in `__init__()`, and therefore the object "
        "must override `get_config()` in order to be serializable); wrote saved_model/ and "
        "model.weights.h5 but no model.keras: give the class a get_config() returning its "
        "__init__ arguments to get model.keras"
    ]
    assert not (tmp_path / "model.keras").exists()
    assert result.summary["exports"] == [str(tmp_path / "saved_model")]
    trained = np.asarray(result.state.model(tf.constant(x), training=False))
    np.testing.assert_allclose(serve(tmp_path, x), trained, atol=1e-6)


def test_an_export_that_fails_keeps_checkpoint_and_summary_and_a_rerun_exports(tmp_path):
    broken = tmp_path / "broken.py"
    text = (FILES / "subclassed.py").read_text()
    good = 'return {**super().get_config(), "units": self.units, "classes": self.classes}'
    assert good in text
    broken.write_text(text.replace(good, 'raise RuntimeError("my get_config is broken")'))
    model_dir = tmp_path / "model"
    args = [f"--task={broken}", "--epochs=1", "--batch_size=32", f"--model_dir={model_dir}"]
    failed = support.run_main(args, tmp_path / "logs1", 180)
    assert failed.returncode == 1, failed.tail()
    assert "RuntimeError: my get_config is broken" in failed.stderr  # the user's traceback
    assert "Traceback" in failed.stderr
    (summary,) = strict(model_dir / "summary.json")
    assert summary["exports"] == []
    assert support.checkpoint_steps(model_dir), "the checkpoint is gone"
    broken.write_text(text)  # the user mends get_config and runs the same command again
    again = support.run_main(args, tmp_path / "logs2", 180)
    assert again.returncode == 0, again.tail()
    assert "tf_mgpu export: the last run's export had not finished" in again.stdout
    (summary,) = strict(model_dir / "summary.json")
    assert summary["exports"] == [str(model_dir / "model.keras"), str(model_dir / "saved_model")]
    assert (model_dir / "model.keras").is_file()


def test_a_train_step_adding_nothing_per_replica_on_two_replicas_equals_one_device():
    # PENALTY 0: the step is keras.io's; Keras's compute_loss divides by the replica count.
    one, two = one_and_two(load("own_train_step", PENALTY=0.0))
    assert two.state.own_step
    assert_same_weights(one, two, atol=1e-10)
    assert int(two.state.steps.numpy()) == 2 * (1024 // 32)


def test_the_models_own_train_step_is_what_trains_it_and_the_start_says_so(capsys):
    config = Config(batch_size=16, epochs=2, seed=3, jit_compile=False)
    plain = training.run(config, load("own_train_step", PENALTY=0.0), strategy=cpu_strategy(2))
    capsys.readouterr()
    penalized = training.run(config, load("own_train_step", PENALTY=0.5), strategy=cpu_strategy(2))
    out = capsys.readouterr().out
    assert out.count("tf_mgpu step: Penalized.train_step, run on each replica") == 1, out

    def norm(result) -> float:
        return sum(float(np.sum(w**2)) for w in weights(result.state.model))

    assert norm(penalized) < 0.9 * norm(plain), "the penalty in train_step was not applied"
    assert penalized.summary["history"][-1]["train_examples"] == 1024
    assert np.isfinite(penalized.summary["history"][-1]["train_loss"])


def test_check_names_a_train_step_as_what_it_cannot_see_into():
    from tf_mgpu.tools.check import runner

    config = Config(task=str(FILES / "own_train_step.py"), batch_size=8, dtype="float64")
    support.fresh_collective_keys()  # check builds its own MirroredStrategy in this process
    outcome = runner.check(config, 2, 5)
    assert not outcome.equivalent
    assert "likely cause: Penalized.train_step runs on each replica" in outcome.text, outcome.text
    assert "add_loss" not in outcome.text, outcome.text


def test_a_model_overriding_compute_loss_is_refused_in_one_line():
    class Weighted(keras.Model):
        def compute_loss(self, *args, **kwargs):
            return 2.0 * super().compute_loss(*args, **kwargs)

    class Task:
        load_data = staticmethod(load("loss_scale_sgd").load_data)

        @staticmethod
        def build_model():
            x = keras.Input((16,))
            model = Weighted(x, keras.layers.Dense(3)(x))
            model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
            return model

    with pytest.raises(UserError, match=r"Weighted overrides compute_loss\(\), which tf_mgpu"):
        training.run(Config(epochs=1, jit_compile=False), Task(), strategy=cpu_strategy(1))


def kill_mid_epoch_then_resume(tmp_path, args: list[str], steps_per_epoch: int) -> None:
    """An uninterrupted run, and one SIGKILLed after a mid-epoch checkpoint and run again:
    the same final weights."""
    common = [*args, "--epochs=40", "--steps_per_loop=1", "--checkpoint_steps=8"]
    reference = support.run_main([*common, f"--model_dir={tmp_path / 'ref'}"], tmp_path / "r", 300)
    assert reference.returncode == 0, reference.tail()
    model_dir = tmp_path / "run"
    again = [*common, f"--model_dir={model_dir}"]
    run = support.Started(again, tmp_path / "logs", name="killed")
    try:
        support.wait_until(
            lambda: any(s % steps_per_epoch for s in support.checkpoint_steps(model_dir)),
            timeout=120,
            what="a mid-epoch checkpoint",
        )
        run.signal_group(signal.SIGKILL)
    finally:
        killed = run.wait(30)
    assert killed.returncode == -signal.SIGKILL, killed.tail()
    assert not (model_dir / "summary.json").exists(), "the run finished before the kill"
    resumed = support.run_main(again, tmp_path / "resumed", 300)
    assert resumed.returncode == 0, resumed.tail()
    assert "tf_mgpu resume: from" in resumed.stdout, resumed.tail()
    assert support.digests(resumed) == support.digests(reference), resumed.tail()


@pytest.mark.cluster
def test_mixed_float16_killed_mid_epoch_resumes_to_the_same_weights(tmp_path):
    args = [f"--task={FILES / 'mixed16_in_build.py'}", "--num_cpu_devices=2", "--batch_size=16"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32)


@pytest.mark.cluster
def test_an_own_train_step_killed_mid_epoch_resumes_to_the_same_weights(tmp_path):
    args = [f"--task={FILES / 'own_train_step.py'}", "--batch_size=32"]
    kill_mid_epoch_then_resume(tmp_path, args, steps_per_epoch=1024 // 32)


@pytest.mark.parametrize(
    "name", ["callbacks", "CALLBACKS", "class_weight", "validation_data", "epochs"]
)
def test_a_module_level_name_fit_would_read_is_refused_not_silently_ignored(name):
    module = load("loss_scale_sgd")
    setattr(module, name, [keras.callbacks.EarlyStopping()] if "allback" in name else 5)
    with pytest.raises(UserError, match=f"defines '{name}', which tf_mgpu would ignore"):
        adapter.load(module)


def test_stateful_metrics_are_exact_across_replicas_and_equal_keras_evaluate():
    # 256 test examples over a global batch of 2 x 48: the last batch is padded, and each
    # replica's share holds its own mix of positives, so a mean of the replicas' results
    # (precision of each half) would differ from the result of their summed state.
    task = load("binary_auc")
    config = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
    one, two = one_and_two(task, config)
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = two.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("auc", "precision", "recall", "accuracy", "loss"):
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
        assert two.summary[f"test_{name}"] == pytest.approx(
            one.summary[f"test_{name}"], abs=1e-6
        ), name
    assert 0.0 < two.summary["test_precision"] < 1.0
    held = [getattr(v, "path", v.name) for v in two.state.checkpointed()["train_sums"]]
    assert any("true_positives" in path for path in held), held


@pytest.mark.parametrize(
    "settings",
    [{}, {"input": "stream"}, {"accumulation_steps": 2}],
    ids=["resident", "stream", "accumulated"],
)
def test_sample_and_class_weights_on_two_replicas_equal_one_device(settings):
    task = load("binary_classifier_task")
    config = dataclasses.replace(FLOAT64, **settings)
    one, two = one_and_two(task, config)
    assert_same_weights(one, two, atol=1e-10)
    unweighted = training.run(
        dataclasses.replace(config, batch_size=32),
        load("binary_classifier_task", CLASS_WEIGHT=None),
        strategy=cpu_strategy(1),
    )
    assert largest_difference(one, unweighted) > 1e-2, "the weights changed nothing"


def test_weighted_test_loss_equals_keras_evaluate_and_class_weights_raise_recall():
    config = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")
    weighted = training.run(config, load("binary_classifier_task"), strategy=cpu_strategy(2))
    (_, _, _), (x_test, y_test, w_test) = load("binary_classifier_task").load_data()
    keras_says = weighted.state.model.evaluate(
        x_test, y_test, sample_weight=w_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "auc", "precision", "recall"):
        assert weighted.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    plain = training.run(
        config, load("binary_classifier_task", CLASS_WEIGHT=None), strategy=cpu_strategy(2)
    )
    assert weighted.summary["test_recall"] > plain.summary["test_recall"] + 0.1


@pytest.mark.parametrize(
    ("weights", "said"),
    [
        (lambda n: -np.ones(n), "sample_weight_train holds negative weights"),
        (lambda n: np.ones((n, 2)), "sample_weight_train has shape"),
        (lambda n: np.full(n, np.nan), "sample_weight_train holds"),
    ],
    ids=["negative", "shape", "nan"],
)
def test_bad_sample_weights_are_one_line(weights, said):
    module = load("binary_classifier_task")
    (x, y, _), test = module.load_data()
    module.load_data = lambda: ((x, y, weights(len(y))), test)
    with pytest.raises(UserError, match=said):
        adapter.load(module).load_data(Config())


def test_class_weight_missing_a_class_and_weighted_datasets_are_one_line():
    module = load("binary_classifier_task", CLASS_WEIGHT={0: 1.0})
    with pytest.raises(UserError, match="CLASS_WEIGHT has no weight for class 1"):
        adapter.load(module).load_data(Config())
    (x, y, w), test = load("binary_classifier_task").load_data()
    module = load("binary_classifier_task", CLASS_WEIGHT=None)
    module.load_data = lambda: (tf.data.Dataset.from_tensor_slices((x, y, w)), test)
    with pytest.raises(UserError, match=r"yields \(x, y, sample_weight\) elements"):
        adapter.load(module).load_data(Config())


def test_weighted_metrics_are_refused_not_silently_ignored():
    class Task:
        load_data = staticmethod(load("binary_classifier_task").load_data)

        @staticmethod
        def build_model():
            model = load("binary_classifier_task").build_model()
            model.compile(optimizer="sgd", loss="binary_crossentropy", weighted_metrics=["auc"])
            return model

    with pytest.raises(UserError, match="compiled with weighted_metrics"):
        training.run(Config(epochs=1, jit_compile=False), Task(), strategy=cpu_strategy(1))


def test_validation_split_holds_out_the_last_fraction_and_reports_val_every_epoch(tmp_path):
    config = Config(
        batch_size=16,
        epochs=2,
        seed=3,
        jit_compile=False,
        dtype="float64",
        validation_split=0.25,
        model_dir=str(tmp_path),
    )
    result = training.run(config, load("binary_classifier_task"), strategy=cpu_strategy(2))
    (x, y, w), _ = load("binary_classifier_task").load_data()
    kept = int(len(y) * 0.75)  # 256 held out: Keras evaluate under 2 replicas wants even
    keras_says = result.state.model.evaluate(  # sample weights, no class weights: as fit
        x[kept:], y[kept:], sample_weight=w[kept:], batch_size=256, return_dict=True, verbose=0
    )
    assert result.summary["val_examples"] == len(y) - kept
    for name in ("loss", "auc", "precision", "recall"):
        assert result.summary[f"val_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name
    logged = strict(tmp_path / "metrics.jsonl")
    assert [("val_loss" in r, "val_auc" in r) for r in logged] == [(True, True)] * 2
    assert (tmp_path / "tensorboard" / "validation").is_dir()


def test_load_data_may_return_train_validation_and_test():
    module = load("loss_scale_sgd", LOSS_SCALE=False)
    (x, y), test = module.load_data()
    module.load_data = lambda: ((x[:768], y[:768]), (x[768:], y[768:]), test)
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False, dtype="float64")
    result = training.run(config, module, strategy=cpu_strategy(2))
    keras_says = result.state.model.evaluate(x[768:], y[768:], return_dict=True, verbose=0)
    assert result.summary["val_examples"] == 256
    assert result.summary["val_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
    assert result.summary["val_accuracy"] == pytest.approx(keras_says["accuracy"], abs=1e-6)
    both = dataclasses.replace(config, validation_split=0.1)
    with pytest.raises(UserError, match="returns a validation split and --validation_split"):
        training.run(both, module, strategy=cpu_strategy(1))


@pytest.mark.cluster
def test_two_workers_with_stateful_metrics_weights_and_validation_equal_one_device(tmp_path):
    """MultiWorkerMirroredStrategy, 2 real processes: AUC/Precision/Recall states and the
    validation pass are collectives there; the run must equal one device's."""
    example = str(path_of("binary_classifier_task"))
    common = [
        "--epochs=2",
        "--seed=3",
        "--nojit_compile",
        "--dtype=float64",
        "--validation_split=0.25",
        "--startup_timeout=120",
    ]

    def args(task: str) -> list[str]:
        return [
            f"--task={example}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=16",
            *common,
            f"--model_dir={tmp_path / task.replace(':', '_')}",
        ]

    finished = support.run_cluster(
        support.cluster_spec(workers=2), args, tmp_path / "logs", timeout=300
    )
    tails = "\n".join(f.tail() for f in finished.values())
    assert all(f.returncode == 0 for f in finished.values()), tails
    assert support.digests(finished["worker:0"])["workers"] == "2", tails
    (cluster,) = strict(tmp_path / "worker_0" / "summary.json")
    config = Config(
        task=example,
        batch_size=32,
        epochs=2,
        seed=3,
        jit_compile=False,
        dtype="float64",
        validation_split=0.25,
    )
    one = training.run(config, strategy=cpu_strategy(1)).summary
    assert (cluster["num_workers"], cluster["global_batch"]) == (2, 32)
    for key in (
        "val_loss",
        "val_auc",
        "val_precision",
        "test_loss",
        "test_auc",
        "test_recall",
        "train_loss",
    ):
        assert cluster["history"][-1][key] == pytest.approx(one["history"][-1][key], abs=1e-9), key
