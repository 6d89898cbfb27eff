"""Feeding replicas: resident vs streamed input, steps per call, where XLA compiles."""

import dataclasses

import numpy as np
import pytest

from tests.support import cpu_strategy, subset
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.step import loop

SMALL = Config(batch_size=16, epochs=2, learning_rate=0.1, seed=3)


def weights(result: training.Result) -> list[np.ndarray]:
    return [np.array(w.numpy()) for w in result.state.model.weights]


@pytest.mark.parametrize(
    ("replicas", "jit", "input_kind", "expected"),
    [
        (1, True, "resident", "loop"),
        (1, False, "resident", "none"),
        (1, True, "stream", "none"),
        (2, True, "resident", "none"),
    ],
)
def test_xla_compiles_the_whole_call_only_for_one_replica_in_one_process(
    replicas, jit, input_kind, expected
):
    assert loop.jit_scope(cpu_strategy(replicas), jit, input_kind) == expected


def test_resident_copies_live_on_each_replicas_device(mnist):
    strategy = cpu_strategy(2)
    copies = loop._on_each_replica(strategy, subset(mnist, 64, 1).train.x)
    placed = [value.device for value in copies.values]
    assert placed == strategies.devices_of(strategy), placed


@pytest.mark.parametrize("replicas", [1, 2], ids=["one_device", "mirrored_2cpu"])
def test_steps_per_call_do_not_change_a_single_bit(mnist, replicas):
    # 1000 examples at a global batch of 32: 31 steps an epoch, so 7 steps
    # per call leaves a short last call in every epoch.
    datasets = subset(mnist, 1000, 200)
    config = dataclasses.replace(SMALL, batch_size=32 // replicas)
    results = [
        training.run(
            dataclasses.replace(config, steps_per_loop=k),
            strategy=cpu_strategy(replicas),
            datasets=datasets,
        )
        for k in (1, 7, 200)
    ]
    for other in results[1:]:
        for a, b in zip(weights(results[0]), weights(other), strict=True):
            np.testing.assert_array_equal(a, b)
        losses = [[r[key] for r in other.summary["history"]] for key in ("train_loss", "test_loss")]
        reference = [
            [r[key] for r in results[0].summary["history"]] for key in ("train_loss", "test_loss")
        ]
        assert losses == reference


@pytest.mark.parametrize("replicas", [1, 2], ids=["one_device", "mirrored_2cpu"])
def test_streamed_input_trains_like_resident_input(mnist, replicas):
    datasets = subset(mnist, 1000, 200)
    config = dataclasses.replace(SMALL, batch_size=32 // replicas, jit_compile=False)
    resident = training.run(config, strategy=cpu_strategy(replicas), datasets=datasets)
    stream = training.run(
        dataclasses.replace(config, input="stream"),
        strategy=cpu_strategy(replicas),
        datasets=datasets,
    )
    for a, b in zip(weights(resident), weights(stream), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    assert stream.summary["test_loss"] == pytest.approx(resident.summary["test_loss"], abs=1e-5)
    assert stream.summary["history"][0]["train_examples"] == 992


def test_xla_and_plain_loops_agree_within_rounding(mnist):
    datasets = subset(mnist, 1000, 200)
    config = dataclasses.replace(SMALL, batch_size=32)
    fast = training.run(config, strategy=cpu_strategy(1), datasets=datasets)
    plain = training.run(
        dataclasses.replace(config, jit_compile=False), strategy=cpu_strategy(1), datasets=datasets
    )
    assert (fast.summary["xla"], plain.summary["xla"]) == ("loop", "none")
    for a, b in zip(weights(fast), weights(plain), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
