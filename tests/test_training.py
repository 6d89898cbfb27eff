"""The training loop: synchronised replicas, equivalence to one device, real MNIST."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import ROOT, cpu_strategy, fresh_collective_keys, subset
from tf_mgpu import training
from tf_mgpu.cluster import tf_config
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.state import training_state as engine_state
from tf_mgpu.engine.step import trainer
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter

SMALL = Config(batch_size=16, epochs=2, learning_rate=0.1, seed=3)


def weights(model) -> list[np.ndarray]:
    return [np.array(w.numpy()) for w in model.weights]


def replica_copies(variable) -> list[np.ndarray]:
    """One value per replica: Keras variables wrap a tf.distribute MirroredVariable."""
    mirrored = variable.value if isinstance(variable, keras.Variable) else variable
    return [np.array(copy.numpy()) for copy in mirrored.values]


@pytest.mark.parametrize("replicas", [2, 4], ids=["mirrored_2cpu", "mirrored_4cpu"])
def test_every_replica_holds_the_same_variables_after_training(mnist, replicas):
    result = training.run(SMALL, strategy=cpu_strategy(replicas), datasets=subset(mnist, 1024, 256))
    assert result.summary["replicas"] == replicas
    variables = result.state.variables()
    names = [getattr(v, "path", v.name) for v in variables]
    assert any("iteration" in name for name in names), names
    for variable, name in zip(variables, names, strict=True):
        copies = replica_copies(variable)
        assert len(copies) == replicas, name
        for replica, copy in enumerate(copies[1:], start=1):
            np.testing.assert_array_equal(copy, copies[0], f"{name} replica {replica}")
    assert int(result.state.epoch.numpy()) == SMALL.epochs
    steps = SMALL.epochs * (1024 // (SMALL.batch_size * replicas))
    assert int(result.state.optimizer.iterations.numpy()) == steps


# float32 rounding flips a ReLU now and then, and SGD carries the jump: on an AMD EPYC 4 x 16
# and 1 x 64 differ by 8.7e-4 after 30 steps, so float32 compares 10 steps (1 epoch) and
# float64 the whole 2 epochs.
@pytest.mark.parametrize(
    ("dtype", "epochs", "tolerance"), [("float32", 1, 1e-5), ("float64", 2, 1e-10)]
)
@pytest.mark.parametrize("replicas", [2, 4], ids=["mirrored_2cpu", "mirrored_4cpu"])
def test_n_replicas_train_like_one_replica_at_the_same_global_batch(
    mnist, replicas, dtype, epochs, tolerance
):
    # 1000 examples: the global batch never divides them, so the dropped
    # remainder must be the same on both sides too. Like with like: one
    # device would take the XLA loop and N CPU replicas cannot, so both run
    # without XLA (XLA and oneDNN kernels round differently, by how much
    # depends on the CPU's instruction set); float64 makes the proof hold on
    # any CPU with a tolerance far below what a real bug moves (1e-2).
    global_batch = SMALL.batch_size * replicas
    datasets = subset(mnist, 1000 if epochs == 2 else 10 * global_batch + 7, 200)
    many_config = dataclasses.replace(SMALL, jit_compile=False, dtype=dtype, epochs=epochs)
    one_config = dataclasses.replace(many_config, batch_size=SMALL.batch_size * replicas)
    initial = weights(initial_model(one_config, datasets))
    one = training.run(one_config, strategy=cpu_strategy(1), datasets=datasets)
    many = training.run(many_config, strategy=cpu_strategy(replicas), datasets=datasets)

    assert many.summary["global_batch"] == one.summary["global_batch"]
    trained, reference = many.state.model, one.state.model
    moved = max(np.abs(a - b).max() for a, b in zip(weights(reference), initial, strict=True))
    assert moved > 1e-2, "training barely changed the weights: the comparison proves nothing"
    for a, b, weight in zip(weights(trained), weights(reference), trained.weights, strict=True):
        assert a.dtype == np.dtype(dtype), weight.path
        np.testing.assert_allclose(a, b, atol=tolerance, rtol=0, err_msg=weight.path)
    assert many.summary["test_loss"] == pytest.approx(one.summary["test_loss"], abs=tolerance)


def initial_model(config: Config, datasets):
    """The model `training.run` starts from with `config`, before any step."""
    task = adapter.load(config.task)
    return engine_state.create_state(
        cpu_strategy(1), config, task, datasets.train.take(slice(0, 2))
    ).model


def test_evaluation_counts_every_test_example_across_replicas(mnist):
    # 4 replicas x 16 = a global batch of 64, which does not divide 1000 test examples.
    datasets = subset(mnist, 512, 1000)
    result = training.run(SMALL, strategy=cpu_strategy(4), datasets=datasets)
    for record in result.summary["history"]:
        assert record["test_examples"] == 1000, record
        assert record["train_examples"] == 512, record
    logits = result.state.model.predict(datasets.test.x / 255.0, verbose=0)
    accuracy = np.mean(np.argmax(logits, axis=1) == datasets.test.y)
    # Keras's accuracy metric keeps float32 counts: the exact ratio to float32's precision.
    assert result.summary["test_accuracy"] == pytest.approx(accuracy, abs=1e-7)


@pytest.mark.parametrize("name", ["mirrored", "one_device", "default"])
def test_every_strategy_the_factory_builds_trains(mnist, name):
    fresh_collective_keys()
    strategy = strategies.create(name, tf_config.Node())
    config = dataclasses.replace(SMALL, epochs=1)
    result = training.run(config, strategy=strategy, datasets=subset(mnist, 512, 100))
    assert result.summary["strategy"] == name
    assert result.summary["devices"], result.summary
    assert result.summary["test_examples"] == 100


def test_one_epoch_on_real_mnist_reaches_90_percent(mnist):
    config = Config(batch_size=64, epochs=1, learning_rate=0.1, seed=0)
    result = training.run(config, strategy=cpu_strategy(2), datasets=mnist)
    assert result.summary["test_examples"] == 10000
    assert result.summary["test_accuracy"] >= 0.90, result.summary["history"]


def test_a_split_smaller_than_the_global_batch_names_both_numbers(mnist):
    config = dataclasses.replace(SMALL, batch_size=64)
    with pytest.raises(UserError, match="has 100 examples, fewer than one global batch of 256"):
        training.run(config, strategy=cpu_strategy(4), datasets=subset(mnist, 100, 100))


def test_outputs_land_in_model_dir_and_reload(mnist, tmp_path):
    config = dataclasses.replace(SMALL, model_dir=str(tmp_path))
    result = training.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 512, 128))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoints",
        "metrics.jsonl",
        "model.keras",
        "model.weights.h5",
        "saved_model",
        "summary.json",
        "tensorboard",
    ]
    reloaded = initial_model(config, subset(mnist, 512, 128))
    reloaded.load_weights(tmp_path / "model.weights.h5")
    for a, b in zip(weights(reloaded), weights(result.state.model), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("replicas", "micro", "steps"),
    [(1, 32, 2), (2, 32, 2), (2, 16, 4)],
    ids=["1x32x2_vs_1x64", "2x32x2_vs_1x128", "2x16x4_vs_1x128"],
)
def test_accumulated_micro_batches_train_like_one_big_batch(mnist, replicas, micro, steps):
    datasets = subset(mnist, 1000, 200)
    config = dataclasses.replace(SMALL, batch_size=micro, accumulation_steps=steps)
    big = dataclasses.replace(SMALL, batch_size=micro * steps * replicas)
    accumulated = training.run(config, strategy=cpu_strategy(replicas), datasets=datasets)
    one = training.run(big, strategy=cpu_strategy(1), datasets=datasets)

    assert accumulated.summary["global_batch"] == one.summary["global_batch"]
    optimizer_steps = SMALL.epochs * (1000 // big.batch_size)
    assert int(accumulated.state.optimizer.iterations.numpy()) == optimizer_steps
    for a, b in zip(weights(accumulated.state.model), weights(one.state.model), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    assert accumulated.summary["history"][-1]["train_loss"] == pytest.approx(
        one.summary["history"][-1]["train_loss"], abs=1e-5
    )
    assert accumulated.summary["test_loss"] == pytest.approx(one.summary["test_loss"], abs=1e-5)


def test_summary_reports_the_steady_speed_apart_from_the_first_epoch(mnist):
    result = training.run(SMALL, strategy=cpu_strategy(1), datasets=subset(mnist, 512, 100))
    summary, history = result.summary, result.summary["history"]
    assert summary["first_epoch_seconds"] == history[0]["seconds"]
    assert summary["steady_examples_per_second"] == pytest.approx(
        history[1]["train_examples"] / history[1]["seconds"]
    )
    assert summary["xla"] == "loop"
    assert summary["peak_host_memory_mib"] > 0


def test_scaled_learning_rate_follows_the_global_batch(mnist):
    config = dataclasses.replace(SMALL, batch_size=64, scale_lr=True, warmup_epochs=1)
    result = training.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 1024, 100))
    assert result.summary["learning_rate"] == pytest.approx(SMALL.learning_rate * 128 / 64)
    optimizer = result.state.optimizer
    # Two epochs of 8 steps, warmup over the first 8: the rate has reached its peak.
    assert float(optimizer.learning_rate) == pytest.approx(SMALL.learning_rate * 2)


def test_batch_workers_keeps_the_global_batch_and_the_scaled_rate(tmp_path, capsys):
    # One process, where --batch_size is per replica for 2 workers: its replica takes 2 x 16.
    config = Config(
        task=str(ROOT / "tests" / "keras_files" / "loss_reduction.py"),  # SGD at 0.1
        epochs=1,
        batch_size=16,
        batch_workers=2,
        scale_lr=True,
        model_dir=str(tmp_path),
    )
    summary = training.run(config, strategy=cpu_strategy(1)).summary
    assert (summary["per_replica_batch"], summary["global_batch"]) == (32, 32)
    assert summary["learning_rate"] == pytest.approx(0.1 * 32 / 16), "scaled from --batch_size"
    assert (
        "tf_mgpu batch: --batch_size=16 is per replica on --batch_workers=2 workers; on 1 each "
        "replica takes 32, for the same global batch"
    ) in capsys.readouterr().out
    # Without the flag the global batch changes: refused, saying what keeps it.
    with pytest.raises(UserError, match=r"global_batch 32 there, 16 now; .*--batch_workers="):
        training.run(dataclasses.replace(config, batch_workers=None), strategy=cpu_strategy(1))


def test_mixed_bfloat16_trains_and_keeps_float32_weights(mnist):
    config = dataclasses.replace(SMALL, batch_size=64, epochs=1, dtype="mixed_bfloat16")
    try:
        result = training.run(config, strategy=cpu_strategy(1), datasets=subset(mnist, 4096, 500))
    finally:
        keras.config.set_dtype_policy("float32")
    assert {w.dtype for w in result.state.model.weights} == {"float32"}
    assert result.summary["test_accuracy"] > 0.8, result.summary["history"]


def test_running_out_of_memory_is_one_line_naming_the_batch_and_the_fixes(mnist, monkeypatch):
    def exhausted(self, *args, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")

    monkeypatch.setattr(trainer.Trainer, "train_epoch", exhausted)
    config = dataclasses.replace(SMALL, accumulation_steps=2)
    with pytest.raises(UserError) as error:
        training.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 512, 100))
    message = str(error.value)
    assert "out of memory at a global batch of 64 (16 per replica x 2 replicas x 2" in message
    assert "lower --batch_size" in message, message
    assert "raise --accumulation_steps" in message, message
    assert "\n" not in message
