"""The compute probe: FLOP counted on the gradient's pruned graph, and the matmul peak."""

import keras
import tensorflow as tf

from tf_mgpu.tools.benchmarks import compute

BATCH, IN, OUT = 8, 32, 16


def gradient_flops(wrt_input: bool) -> float:
    layer = keras.layers.Dense(OUT, use_bias=False)
    layer.build((BATCH, IN))

    @tf.function
    def gradients(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.square(layer(x)))  # its gradient needs the forward pass
        return tape.gradient(loss, [x, layer.kernel] if wrt_input else [layer.kernel])

    return compute.graph_flops(gradients.get_concrete_function(tf.zeros((BATCH, IN))))


def test_only_what_the_gradients_need_is_counted():
    matmul = 2 * BATCH * IN * OUT
    # Forward and the kernel's gradient; the input's gradient is not computed, so not
    # counted. What is left over is the loss's elementwise ops.
    assert 2 * matmul <= gradient_flops(wrt_input=False) < 2.1 * matmul
    assert 3 * matmul <= gradient_flops(wrt_input=True) < 3.1 * matmul


def test_the_matmul_peak_is_a_rate_and_the_size_that_reached_it():
    rate, size = compute.matmul_peak(sizes=(64, 128), work=1e8)
    assert size in (64, 128)
    assert 1e6 < rate < 1e14, rate


SEED_SHAPED_TASK = """
import keras
import numpy as np


def build_model():
    model = keras.Sequential(
        [keras.Input((784,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer="sgd",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    def split(n):
        return rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n)
    return split(128), split(64)
"""


def test_a_task_shaped_like_the_seed_does_twice_its_forward_matmuls_and_a_bit(tmp_path):
    task = tmp_path / "seed_shaped.py"
    task.write_text(SEED_SHAPED_TASK)
    flops = compute.step_flops(str(task), None, None, "train", "test")
    forward = 2 * (784 * 128 + 128 * 10)
    # Forward, both kernels' gradients and the hidden layer's gradient (the image's is
    # not needed): 2 x forward + 2 x 128 x 10, plus the biases and the loss.
    needed = 2 * forward + 2 * 128 * 10
    assert needed <= flops < 1.02 * needed, flops
