"""How throughput should scale with replicas: a ring all-reduce model, and what it is fed.

The model, per optimizer step of synchronous data parallelism:

    step(N, b)       = compute(b) + allreduce(N)
    compute(b)       = step_overhead + b * seconds_per_example       (one replica, no communication)
    allreduce(N)     = 2(N-1)/N * bytes / bandwidth + 2(N-1) * hop_latency     (ring; 0 for N = 1)
    throughput(N, b) = N * b / step(N, b)
    efficiency(N, b) = throughput(N, b) / (N * throughput(1, b)) = compute(b) / step(N, b)

Assumptions, beyond the constants below (each of which says whether it was measured):
- Communication does not overlap compute. Keras applies gradients after one all-reduce of
  all four tensors, so the backward pass cannot hide it; the model is pessimistic only where
  the runtime overlaps anyway.
- The ring runs 2(N-1) sequential steps (reduce-scatter, then all-gather), each sending
  bytes/N over the slowest link and paying one hop latency (the alpha-beta cost model).
  For N = 2 that is bytes / bandwidth + 2 * hop_latency. NCCL switches to trees for small
  messages on many hosts, which makes the latency term grow like log N instead.
- Every replica computes as fast as one replica alone, and the gradient is one all-reduce of
  407,080 bytes (TensorFlow packs the four tensors; unpacked, each pays the latency).
- Multi-host settings have one GPU per host: the inter-host ring is the bottleneck, and more
  GPUs per host only add a fast in-host step.
- Input, evaluation and checkpoints cost nothing: the data is resident in device memory.

`measure_allreduce` times the real all-reduce of the model's gradient under a
tf.distribute strategy; the sweep runs it in its own process (see `tf_mgpu.sweep`).
"""

import dataclasses
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence

from tf_mgpu import strict_json

# The seed's network: Dense(784 -> 128) and Dense(128 -> 10), weights and biases.
GRADIENT_SHAPES = ((784, 128), (128,), (128, 10), (10,))
PARAMETERS = sum(math.prod(shape) for shape in GRADIENT_SHAPES)  # 101,770
GRADIENT_BYTES = 4 * PARAMETERS  # float32: 407,080 bytes per all-reduce
BF16_GRADIENT_BYTES = 2 * PARAMETERS  # the what-if: gradients all-reduced in bfloat16

# Training FLOPs per example: a multiply-add (2 FLOPs) per weight forward, twice that
# backward (gradients of the inputs and of the weights). Biases and relu are noise.
FLOPS_PER_EXAMPLE = 2 * 3 * PARAMETERS

# ASSUMED, not measured (no GPU here): FLOP/s a data-centre GPU sustains on matmuls
# this small (64-512 x 784 x 128), about a quarter of an A100's 19.5 TFLOP/s float32 peak.
GPU_FLOPS = 5e12
# ASSUMED: fixed cost of one training step on a GPU whatever the batch: the host
# dispatching the compiled step and ~20 kernel launches of a few microseconds each.
GPU_STEP_OVERHEAD = 150e-6

# Which replica counts the prediction covers: GPUs in one host, and hosts.
GPUS_PER_HOST = (1, 2, 4, 8)
HOSTS = (2, 4, 8, 16, 32, 64)

# ASSUMED: Ethernet delivers this fraction of its line rate to the all-reduce (TCP, NCCL
# socket transport), and each ring step pays this one-way latency (kernel TCP, one switch).
ETHERNET_EFFICIENCY = 0.85
ETHERNET_HOP_LATENCY = 30e-6

# The break-even: below this efficiency, adding replicas wastes more than half of each.
BREAK_EVEN_EFFICIENCY = 0.5


@dataclasses.dataclass(frozen=True)
class Link:
    """An interconnect: effective bytes/s one ring step moves, and its latency in seconds."""

    name: str
    bandwidth: float
    hop_latency: float

    def allreduce_seconds(self, replicas: int, nbytes: int) -> float:
        return ring_allreduce_seconds(nbytes, replicas, self.bandwidth, self.hop_latency)


# ASSUMED, from vendor figures and typical NCCL all-reduce bus bandwidths.
NVLINK = Link("NVLink", bandwidth=150e9, hop_latency=3e-6)
PCIE = Link("PCIe 4.0 x16", bandwidth=16e9, hop_latency=10e-6)  # 12-20 GB/s effective
ETHERNET = tuple(
    Link(f"{gbits} GbE", gbits * 1e9 / 8 * ETHERNET_EFFICIENCY, ETHERNET_HOP_LATENCY)
    for gbits in (10, 25, 100)
)


def ring_allreduce_seconds(
    nbytes: int, replicas: int, bandwidth: float, hop_latency: float
) -> float:
    """Seconds for a ring all-reduce of `nbytes` over `replicas`: 0 for one replica."""
    steps = 2 * (replicas - 1)
    return steps / replicas * nbytes / bandwidth + steps * hop_latency


@dataclasses.dataclass(frozen=True)
class Compute:
    """One replica's step without communication: `step_overhead + batch * per_example`."""

    step_overhead: float  # seconds
    per_example: float  # seconds
    source: str  # where the two figures come from, for the printout

    def seconds(self, batch: int) -> float:
        return self.step_overhead + batch * self.per_example


GPU_COMPUTE = Compute(
    GPU_STEP_OVERHEAD,
    FLOPS_PER_EXAMPLE / GPU_FLOPS,
    f"assumed: {GPU_STEP_OVERHEAD * 1e6:g} us/step + {FLOPS_PER_EXAMPLE:,} FLOPs/example "
    f"at {GPU_FLOPS / 1e12:g} TFLOP/s",
)


def fit_compute(points: Iterable[tuple[int, float]], source: str) -> Compute:
    """`Compute` from measured (per-replica batch, seconds per step) of 1-replica runs.

    A least-squares line through the points; through the origin (no overhead)
    when there is one batch size only, or when the line's overhead or slope
    comes out negative, as noisy timings can make them.
    """
    points = sorted(points)
    if not points:
        raise ValueError("no 1-replica measurement to fit compute time to")
    batches = [float(b) for b, _ in points]
    seconds = [s for _, s in points]
    if len(set(batches)) > 1:
        slope, intercept = statistics.linear_regression(batches, seconds)
        if slope > 0 and intercept >= 0:
            return Compute(intercept, slope, source)
    per_example = sum(seconds) / sum(batches)
    return Compute(0.0, per_example, source + ", through the origin")


# (replicas, bytes) -> seconds of one all-reduce, or None where the setting cannot say.
AllReduce = Callable[[int, int], float | None]


@dataclasses.dataclass(frozen=True)
class MeasuredAllReduce:
    """One measured all-reduce: known for `replicas` and `nbytes` only (and free on 1)."""

    replicas: int
    nbytes: int
    seconds: float

    def __call__(self, replicas: int, nbytes: int) -> float | None:
        if replicas == 1:
            return 0.0
        if (replicas, nbytes) == (self.replicas, self.nbytes):
            return self.seconds
        return None


@dataclasses.dataclass(frozen=True)
class Setting:
    """Where the replicas run: their compute, the replica counts, and the all-reduce's cost."""

    name: str
    compute: Compute
    replicas: tuple[int, ...]
    allreduce: AllReduce


@dataclasses.dataclass(frozen=True)
class Prediction:
    setting: str
    replicas: int
    per_replica_batch: int
    step_seconds: float
    allreduce_seconds: float
    examples_per_second: float
    efficiency: float
    efficiency_bf16: float | None  # the same with bfloat16 gradients; None if unknown


def efficiency(compute_seconds: float, allreduce_seconds: float) -> float:
    return compute_seconds / (compute_seconds + allreduce_seconds)


def predict(setting: Setting, batches: Sequence[int]) -> list[Prediction]:
    """Every (replica count, per-replica batch) of `setting` whose all-reduce cost is known."""
    predictions = []
    for replicas in setting.replicas:
        allreduce = setting.allreduce(replicas, GRADIENT_BYTES)
        if allreduce is None:
            continue
        allreduce_bf16 = setting.allreduce(replicas, BF16_GRADIENT_BYTES)
        for batch in batches:
            compute = setting.compute.seconds(batch)
            step = compute + allreduce
            predictions.append(
                Prediction(
                    setting=setting.name,
                    replicas=replicas,
                    per_replica_batch=batch,
                    step_seconds=step,
                    allreduce_seconds=allreduce,
                    examples_per_second=replicas * batch / step,
                    efficiency=efficiency(compute, allreduce),
                    efficiency_bf16=None
                    if allreduce_bf16 is None
                    else efficiency(compute, allreduce_bf16),
                )
            )
    return predictions


def break_even_batch(compute: Compute, allreduce_seconds: float) -> int:
    """The smallest per-replica batch whose efficiency is at least BREAK_EVEN_EFFICIENCY.

    Efficiency is compute / (compute + allreduce), rising with the batch;
    below the returned batch it is under the threshold.
    """
    # compute(b) >= allreduce * e / (1 - e) is the same condition, solved for b.
    needed = allreduce_seconds * BREAK_EVEN_EFFICIENCY / (1 - BREAK_EVEN_EFFICIENCY)
    batch = max(1, math.ceil((needed - compute.step_overhead) / compute.per_example))

    # Rounding in the division may leave the exact boundary one off either way.
    def enough(b: int) -> bool:
        return efficiency(compute.seconds(b), allreduce_seconds) >= BREAK_EVEN_EFFICIENCY

    while batch > 1 and enough(batch - 1):
        batch -= 1
    while not enough(batch):
        batch += 1
    return batch


def assumed_settings() -> list[Setting]:
    """GPUs in one host over NVLink or PCIe, and one-GPU hosts over Ethernet; all assumed."""
    in_host = [
        Setting(f"{link.name}, 1 host", GPU_COMPUTE, GPUS_PER_HOST, link.allreduce_seconds)
        for link in (NVLINK, PCIE)
    ]
    across = [
        Setting(f"{link.name}, hosts", GPU_COMPUTE, HOSTS, link.allreduce_seconds)
        for link in ETHERNET
    ]
    return in_host + across


# The two settings measured here, by the strategy whose all-reduce was timed.
MEASURED = {
    "mirrored": "here: 2 replicas, 1 process",
    "multi_worker_mirrored": "here: 2 workers, loopback",
}


def measured_settings(compute: Compute, allreduce_seconds: dict[str, float]) -> list[Setting]:
    """This machine: measured compute, and each measured 2-replica all-reduce by strategy."""
    return [
        Setting(MEASURED[kind], compute, (2,), MeasuredAllReduce(2, GRADIENT_BYTES, seconds))
        for kind, seconds in allreduce_seconds.items()
    ]


def break_even_rows(settings: Iterable[Setting]) -> list[dict]:
    """Per setting and replica count above 1: the all-reduce and the break-even batch."""
    rows = []
    for setting in settings:
        for replicas in setting.replicas:
            allreduce = setting.allreduce(replicas, GRADIENT_BYTES)
            if replicas == 1 or allreduce is None:
                continue
            bf16 = setting.allreduce(replicas, BF16_GRADIENT_BYTES)
            rows.append(
                {
                    "setting": setting.name,
                    "replicas": replicas,
                    "allreduce_ms": allreduce * 1e3,
                    "break_even_batch": break_even_batch(setting.compute, allreduce),
                    "break_even_batch_bf16": None
                    if bf16 is None
                    else break_even_batch(setting.compute, bf16),
                }
            )
    return rows


def prediction_table(predictions: Iterable[Prediction]) -> str:
    lines = [
        f"{'setting':<26} {'N':>3} {'batch':>6} {'step ms':>9} {'allreduce ms':>12} "
        f"{'examples/s':>12} {'efficiency':>10} {'eff bf16':>9}"
    ]
    for p in predictions:
        bf16 = "-" if p.efficiency_bf16 is None else f"{p.efficiency_bf16:.0%}"
        lines.append(
            f"{p.setting:<26} {p.replicas:>3} {p.per_replica_batch:>6} "
            f"{p.step_seconds * 1e3:>9.3f} {p.allreduce_seconds * 1e3:>12.3f} "
            f"{p.examples_per_second:>12,.0f} {p.efficiency:>10.0%} {bf16:>9}"
        )
    return "\n".join(lines)


def break_even_table(rows: Iterable[dict]) -> str:
    lines = [
        f"{'setting':<26} {'N':>3} {'allreduce ms':>12} {'break-even batch':>16} {'bf16':>8}",
    ]
    for row in rows:
        bf16 = row["break_even_batch_bf16"]
        lines.append(
            f"{row['setting']:<26} {row['replicas']:>3} {row['allreduce_ms']:>12.3f} "
            f"{row['break_even_batch']:>16,} {'-' if bf16 is None else f'{bf16:,}':>8}"
        )
    return "\n".join(lines)


def assumptions_text(compute: Compute | None) -> str:
    """The inputs a printed prediction rests on, one per line."""
    lines = [
        f"gradient: {PARAMETERS:,} float32 parameters = {GRADIENT_BYTES:,} bytes per all-reduce "
        f"({BF16_GRADIENT_BYTES:,} in bf16)",
        f"GPU compute ({GPU_COMPUTE.source}): {GPU_COMPUTE.per_example * 1e9:.0f} ns/example",
    ]
    for link in (NVLINK, PCIE, *ETHERNET):
        lines.append(
            f"{link.name} (assumed): {link.bandwidth / 1e9:.2f} GB/s effective, "
            f"{link.hop_latency * 1e6:g} us per ring step"
        )
    if compute is not None:
        lines.append(
            f"CPU compute here ({compute.source}): {compute.step_overhead * 1e6:.0f} us/step + "
            f"{compute.per_example * 1e6:.3f} us/example"
        )
    return "\n".join(lines)


# -- The measurement, run in a process of its own: the strategy must come first.

ALLREDUCE_LINE = "tf_mgpu allreduce: "


def measure_allreduce(strategy_name: str, *, calls: int, per_call: int):
    """Times all-reduces of the model's gradient over 2 replicas; returns the result's line.

    `mirrored`: MirroredStrategy over 2 logical CPU devices in this process.
    `multi_worker_mirrored`: this process is one of 2 TF_CONFIG workers with one
    CPU each; every worker must call this with the same arguments. The line,
    `ALLREDUCE_LINE` + JSON, reports the median seconds per all-reduce over
    `calls` calls of a tf.function that chains `per_call` all-reduces (so the
    call's dispatch is shared), after one call that traces and connects. The
    sweep bounds the whole process in time.
    """
    # TensorFlow only here: the model above is arithmetic, and the sweep's
    # parent process, which prints predictions, never starts TensorFlow.
    import tensorflow as tf

    from tf_mgpu.cluster import tf_config
    from tf_mgpu.engine.distribute import devices, strategies

    task = tf_config.node_from_env()
    if strategy_name == "mirrored":
        devices.split_cpu(2)
    strategy = strategies.create(strategy_name, task)
    if strategy.num_replicas_in_sync != 2:
        raise ValueError(f"{strategy_name} has {strategy.num_replicas_in_sync} replicas, not 2")

    def replica_fn():
        gradient = [tf.zeros(shape) for shape in GRADIENT_SHAPES]
        context = tf.distribute.get_replica_context()
        # Each all-reduce takes the previous one's output: they run one after another.
        for _ in range(per_call):
            gradient = context.all_reduce(tf.distribute.ReduceOp.SUM, gradient)
        return gradient[-1]

    @tf.function
    def chained():
        return strategy.run(replica_fn)

    def timed_call() -> float:
        started = time.perf_counter()
        for result in strategy.experimental_local_results(chained()):
            result.numpy()
        return (time.perf_counter() - started) / per_call

    timed_call()
    seconds = sorted(timed_call() for _ in range(calls))
    result = {
        "strategy": strategy_name,
        "task": str(task),
        "replicas": strategy.num_replicas_in_sync,
        "bytes": GRADIENT_BYTES,
        "median_seconds": statistics.median(seconds),
        "min_seconds": seconds[0],
        "max_seconds": seconds[-1],
        "calls": calls,
        "per_call": per_call,
    }
    return ALLREDUCE_LINE + strict_json.dumps(result)


def parse_allreduce_line(stdout: str) -> dict | None:
    """The result `measure_allreduce` printed, or None if the output has none."""
    for line in stdout.splitlines():
        if line.startswith(ALLREDUCE_LINE):
            return json.loads(line[len(ALLREDUCE_LINE) :])
    return None
