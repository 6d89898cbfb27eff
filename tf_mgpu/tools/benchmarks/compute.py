"""How much arithmetic a training step does, and how much this machine can do (`bench`).

Run alone in its own process (`python -m tf_mgpu.bench --variant=compute`), once per
round, so the peak is measured on the machine as the round found it.

- `step_flops`: floating-point operations per example of one forward and backward
  pass of the task's model at the benchmark's batch (64), counted by TensorFlow's
  profiler (tfprof) on the gradient's graph, pruned to what the gradients need (a
  first layer's input gradient is never computed, so it is not counted). Ops with
  no FLOP formula in TensorFlow's registry (most activations and elementwise ops)
  count zero, and the optimizer's update (per step, not per example) is left out:
  a floor, made of the matmuls and convolutions.
- `matmul_peak`: the best rate of float32 square matmuls on TensorFlow's own kernels
  over every core: what this machine's matrix units deliver to TensorFlow.

Achieved FLOP/s is then steady examples/s x FLOP per example (`tools.benchmarks.figures`).
"""

import time

from tf_mgpu.tools.benchmarks import reference_loop, task_fit

MATMUL_SIZES = (512, 1024, 2048)
_WORK = 2e10  # FLOP per timed call: about 0.1 s at 200 GFLOP/s, long against dispatch
_REPEATS = 5


def measure(task: str, data_dir, manual_dir, train_split: str, test_split: str) -> dict:
    """The result line of the compute probe: FLOP per example of `task`, and the peak."""
    flops = step_flops(task, data_dir, manual_dir, train_split, test_split)
    peak, size = matmul_peak()
    return {
        "train_flops_per_example": flops,
        "batch_size": reference_loop.BATCH_SIZE,
        "matmul_peak_flops": peak,
        "matmul_size": size,
    }


def step_flops(task: str, data_dir, manual_dir, train_split: str, test_split: str) -> float:
    """FLOP per example of a forward and backward pass of `task`'s model (see above)."""
    import tensorflow as tf

    from tf_mgpu.engine.step.replica_steps import compute_loss

    found = task_fit.prepared(task, data_dir, manual_dir, train_split, test_split)
    _, datasets, net, host = found
    batch = reference_loop.BATCH_SIZE
    x = tf.nest.map_structure(lambda a: tf.constant(a[:batch]), host(datasets.train.x))
    y = tf.constant(datasets.train.y[:batch])
    # The compiled loss, as tf_mgpu's step takes it from the model.
    net(x, training=False)
    variables = net.trainable_variables

    @tf.function
    def gradients(x, y):
        with tf.GradientTape() as tape:
            loss = compute_loss(net, x, y, net(x, training=True), None, training=True)
        return tape.gradient(loss, variables)

    return graph_flops(gradients.get_concrete_function(x, y)) / batch


def graph_flops(function) -> float:
    """FLOP of the ops `function`'s outputs depend on, by TensorFlow's profiler.

    The graph is pruned to its outputs first; the shapes the profiler needs travel
    with the pruned copy as `_output_shapes`.
    """
    import tensorflow as tf

    outputs = [tensor.op.name for tensor in function.outputs]
    whole = function.graph.as_graph_def(add_shapes=True)
    pruned = tf.compat.v1.graph_util.extract_sub_graph(whole, outputs)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(pruned, name="")
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    return float(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)


def matmul_peak(sizes=MATMUL_SIZES, work: float = _WORK) -> tuple[float, int]:
    """(best FLOP/s, at which size) of float32 n x n matmuls, the best of a few calls of
    about `work` FLOP each."""
    import tensorflow as tf

    best = (0.0, 0)
    for n in sizes:
        count = max(1, int(work // (2 * n**3)))
        a = tf.random.uniform((n, n), seed=1)

        @tf.function(autograph=False)
        def products(a, count=count):
            # A different product each time round (a + k), so none is folded or skipped.
            def step(k, total):
                return k + 1, total + tf.matmul(a, a + tf.cast(k, a.dtype))

            return tf.while_loop(lambda k, _: k < count, step, (0, tf.zeros_like(a)))[1]

        products(a).numpy()  # trace, and warm the kernels
        for _ in range(_REPEATS):
            began = time.perf_counter()
            products(a).numpy()
            rate = 2 * n**3 * count / (time.perf_counter() - began)
            best = max(best, (rate, n))
    return best
