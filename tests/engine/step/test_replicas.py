"""The warning about BatchNormalization layers that keep per-replica statistics."""

import types

import keras
import pytest

from tests.keras.helpers import load
from tf_mgpu.engine.step import replicas
from tf_mgpu.tools.equivalence import report


@pytest.mark.parametrize(
    ("count", "said"),
    [
        (1, "BatchNormalization bn0"),
        (2, "BatchNormalization layers bn0 and bn1"),
        (3, "BatchNormalization layers bn0, bn1 and bn2"),
        (4, "BatchNormalization layers bn0, bn1, bn2 and 1 more"),
        (52, "BatchNormalization layers bn0, bn1, bn2 and 49 more"),
    ],
)
def test_a_few_layers_are_named_and_the_rest_counted(count, said):
    assert replicas.batch_norms([f"bn{i}" for i in range(count)]) == said


def test_a_model_with_52_batch_norms_gets_a_short_warning_and_check_a_short_cause():
    model = load("many_batch_norms").build_model()
    names = replicas.unsynchronized_batch_norm(model)
    assert len(names) == 52
    line = replicas.warning(model, replicas=2, per_replica=16)
    assert line == (
        f"tf_mgpu warning: BatchNormalization layers {names[0]}, {names[1]}, {names[2]} and 49 "
        f"more normalise each replica's 16 examples with their own statistics, not the global "
        f"batch's 32, so 2 replicas do not train like one device; build them with "
        f"keras.layers.BatchNormalization(synchronized=True), or pass --sync_batch_norm"
    )
    facts = types.SimpleNamespace(
        unsynchronized=names,
        many=types.SimpleNamespace(per_replica=16),
        retrace_differs=False,
        first_forward=names[0],
        own_step=None,
        per_replica_state=(),
    )
    assert report.causes(facts)[0] == (
        f"unsynchronized batch statistics: BatchNormalization layers {names[0]}, {names[1]}, "
        f"{names[2]} and 49 more normalise each replica's 16 examples alone; build them with "
        f"keras.layers.BatchNormalization(synchronized=True)"
    )
    assert replicas.warning(model, replicas=1, per_replica=32) is None


def test_one_layer_keeps_its_line_and_synchronized_layers_get_none():
    def model(synchronized: bool) -> keras.Model:
        return keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(4),
                keras.layers.BatchNormalization(synchronized=synchronized, name="bn"),
            ]
        )

    assert replicas.warning(model(False), replicas=2, per_replica=16) == (
        "tf_mgpu warning: BatchNormalization bn normalises each replica's 16 examples with their "
        "own statistics, not the global batch's 32, so 2 replicas do not train like one device; "
        "build it with keras.layers.BatchNormalization(synchronized=True), "
        "or pass --sync_batch_norm"
    )
    assert replicas.warning(model(True), replicas=2, per_replica=16) is None
