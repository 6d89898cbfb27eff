"""Where XLA compiles, chosen per model and machine (`--jit_compile=auto`), with the reason.

What XLA can compile depends on the strategy (`tf_mgpu.engine.step.loop.jit_scope`):
each whole call when a process has one replica and resident input, each
replica's step on GPUs, nothing on several CPU devices or CPU workers.

Whether it should is the model's and the machine's business. Measured on a
2-core AMD EPYC (BUILD_NOTES, `bench --task`): the dense mnist_mlp trains
about 5x faster than the seed's loop with the whole call in XLA, but the
keras.io convnet trained at 191 examples/s with XLA against 2,218 without, because
XLA's CPU convolutions are far slower than the oneDNN kernels TensorFlow
uses otherwise. So `auto` compiles on CPU unless the model convolves; on
GPUs it compiles (TensorFlow's documented fast path; untested here).
`true` and `false` force it, within what the strategy allows.
"""

import dataclasses

import keras
import tensorflow as tf

from tf_mgpu.config_checks import parse_jit_compile
from tf_mgpu.engine.model.layers import every_layer
from tf_mgpu.engine.model.own_steps import overridden
from tf_mgpu.engine.step import loop

# Layers whose XLA CPU kernels are slower than TensorFlow's own (oneDNN) ones.
SLOW_ON_CPU = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.Conv1DTranspose,
    keras.layers.Conv2DTranspose,
    keras.layers.Conv3DTranspose,
    keras.layers.DepthwiseConv1D,
    keras.layers.DepthwiseConv2D,
    keras.layers.SeparableConv1D,
    keras.layers.SeparableConv2D,
)


@dataclasses.dataclass(frozen=True)
class Choice:
    scope: str  # "loop", "replica" or "none" (see tf_mgpu.engine.step.loop)
    reason: str

    def describe(self) -> str:
        return f"xla={self.scope} ({self.reason})"


def choose(
    setting: bool | str, strategy: tf.distribute.Strategy, model: keras.Model, input_kind: str
) -> Choice:
    """What XLA compiles for `model` under `strategy`, and why."""
    setting = parse_jit_compile(setting)
    if setting is False:
        return Choice("none", "--nojit_compile")
    possible = loop.jit_scope(strategy, True, input_kind)
    if possible == "none":
        return Choice(
            "none",
            "XLA compiles here only for one CPU replica with --input=resident, or on GPUs",
        )
    if setting is True:
        return Choice(possible, "--jit_compile")
    if overridden(model):
        return Choice(
            "none",
            f"auto: {', '.join(overridden(model))} runs as Keras runs it under a "
            f"strategy, without XLA; --jit_compile forces XLA",
        )
    if possible == "replica":
        return Choice(possible, "auto: GPUs")
    found = every_layer(model)
    slow = sorted({type(one).__name__ for one in found if isinstance(one, SLOW_ON_CPU)})
    if slow:
        return Choice(
            "none",
            f"auto: {', '.join(slow)} on CPU, where XLA's convolutions are far slower than "
            f"TensorFlow's own; --jit_compile forces XLA",
        )
    return Choice(possible, "auto: no convolutions, the whole call compiles on this CPU")
