"""--jit_compile=auto: XLA chosen per model and machine, with its reason."""

import keras
import pytest

from tests.support import cpu_strategy
from tf_mgpu.engine.step import jit
from tf_mgpu.tasks import mnist_cnn, mnist_mlp


def test_auto_compiles_a_dense_model_on_one_cpu_replica():
    choice = jit.choose("auto", cpu_strategy(1), mnist_mlp.build_model(), "resident")
    assert choice.scope == "loop"
    assert (
        choice.describe() == "xla=loop (auto: no convolutions, the whole call compiles on this CPU)"
    )


def test_auto_leaves_a_convnet_to_tensorflows_own_kernels_on_cpu():
    choice = jit.choose("auto", cpu_strategy(1), mnist_cnn.build_model(), "resident")
    assert choice.scope == "none"
    assert choice.reason.startswith("auto: Conv2D on CPU"), choice.reason
    assert "--jit_compile forces XLA" in choice.reason


def test_a_convolution_inside_a_nested_model_counts():
    inner = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.DepthwiseConv2D(3)])
    outer = keras.Sequential([keras.Input((8, 8, 1)), inner, keras.layers.Flatten()])
    choice = jit.choose("auto", cpu_strategy(1), outer, "resident")
    assert (choice.scope, choice.reason.split(" on ")[0]) == ("none", "auto: DepthwiseConv2D")


@pytest.mark.parametrize(
    ("setting", "scope", "reason"),
    [
        (True, "loop", "--jit_compile"),
        (False, "none", "--nojit_compile"),
        ("true", "loop", "--jit_compile"),
    ],
)
def test_true_and_false_force_it(setting, scope, reason):
    choice = jit.choose(setting, cpu_strategy(1), mnist_cnn.build_model(), "resident")
    assert (choice.scope, choice.reason) == (scope, reason)


@pytest.mark.parametrize(("replicas", "input_kind"), [(2, "resident"), (1, "stream")])
def test_where_the_strategy_allows_no_xla_auto_and_true_say_so(replicas, input_kind):
    for setting in ("auto", True):
        choice = jit.choose(setting, cpu_strategy(replicas), mnist_mlp.build_model(), input_kind)
        assert choice.scope == "none"
        assert "only for one CPU replica with --input=resident, or on GPUs" in choice.reason


def test_anything_else_is_refused():
    with pytest.raises(ValueError, match="'maybe' is not one of auto, true, false"):
        jit.choose("maybe", cpu_strategy(1), mnist_mlp.build_model(), "resident")
