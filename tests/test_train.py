"""The training loop: synchronised replicas, equivalence to one device, real MNIST."""

import dataclasses

import numpy as np
import pytest

from tests.support import cpu_strategy, subset
from tf_mgpu import train
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError

SMALL = Config(batch_size=16, epochs=2, learning_rate=0.1, seed=3)


def weights(model) -> list[np.ndarray]:
    return [np.array(w.numpy()) for w in model.weights]


@pytest.mark.parametrize("replicas", [2, 4], ids=["mirrored_2cpu", "mirrored_4cpu"])
def test_every_replica_holds_the_same_weights_after_training(mnist, replicas):
    result = train.run(SMALL, strategy=cpu_strategy(replicas), datasets=subset(mnist, 1024, 256))
    assert result.summary["replicas"] == replicas
    for weight in result.model.weights:
        copies = [c.numpy() for c in weight.value.values]
        assert len(copies) == replicas, weight.path
        for replica, copy in enumerate(copies[1:], start=1):
            np.testing.assert_array_equal(copy, copies[0], f"{weight.path} replica {replica}")


@pytest.mark.parametrize("replicas", [2, 4], ids=["mirrored_2cpu", "mirrored_4cpu"])
def test_n_replicas_train_like_one_replica_at_the_same_global_batch(mnist, replicas):
    # 1000 examples: the global batch never divides them, so the dropped
    # remainder must be the same on both sides too.
    datasets = subset(mnist, 1000, 200)
    one_config = dataclasses.replace(SMALL, batch_size=SMALL.batch_size * replicas)
    initial = weights(train.create_state(cpu_strategy(1), one_config).model)
    one = train.run(one_config, strategy=cpu_strategy(1), datasets=datasets)
    many = train.run(SMALL, strategy=cpu_strategy(replicas), datasets=datasets)

    assert many.summary["global_batch"] == one.summary["global_batch"]
    moved = max(np.abs(a - b).max() for a, b in zip(weights(one.model), initial, strict=True))
    assert moved > 1e-2, "training barely changed the weights: the comparison proves nothing"
    for a, b, weight in zip(
        weights(many.model), weights(one.model), many.model.weights, strict=True
    ):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0, err_msg=weight.path)
    assert many.summary["test_loss"] == pytest.approx(one.summary["test_loss"], abs=1e-5)


def test_evaluation_counts_every_test_example_across_replicas(mnist):
    # 4 replicas x 16 = a global batch of 64, which does not divide 1000 test examples.
    datasets = subset(mnist, 512, 1000)
    result = train.run(SMALL, strategy=cpu_strategy(4), datasets=datasets)
    for record in result.summary["history"]:
        assert record["test_examples"] == 1000, record
        assert record["train_examples"] == 512, record
    logits = result.model.predict(datasets.test.images / 255.0, verbose=0)
    accuracy = np.mean(np.argmax(logits, axis=1) == datasets.test.labels)
    assert result.summary["test_accuracy"] == pytest.approx(accuracy, abs=1e-9)


def test_one_epoch_on_real_mnist_reaches_90_percent(mnist):
    config = Config(batch_size=64, epochs=1, learning_rate=0.1, seed=0)
    result = train.run(config, strategy=cpu_strategy(2), datasets=mnist)
    assert result.summary["test_examples"] == 10000
    assert result.summary["test_accuracy"] >= 0.90, result.summary["history"]


def test_a_split_smaller_than_the_global_batch_names_both_numbers(mnist):
    config = dataclasses.replace(SMALL, batch_size=64)
    with pytest.raises(UserError, match="has 100 examples, fewer than one global batch of 256"):
        train.run(config, strategy=cpu_strategy(4), datasets=subset(mnist, 100, 100))


def test_outputs_land_in_model_dir_and_reload(mnist, tmp_path):
    config = dataclasses.replace(SMALL, model_dir=str(tmp_path))
    result = train.run(config, strategy=cpu_strategy(2), datasets=subset(mnist, 512, 128))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metrics.jsonl",
        "model.weights.h5",
        "summary.json",
    ]
    reloaded = train.create_state(cpu_strategy(1), config).model
    reloaded.load_weights(tmp_path / "model.weights.h5")
    for a, b in zip(weights(reloaded), weights(result.model), strict=True):
        np.testing.assert_array_equal(a, b)
