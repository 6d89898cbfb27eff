"""`check`'s table: whether N replicas train like one device, where not, and the likely cause."""

import dataclasses

from tf_mgpu.engine.step import jit, replicas
from tf_mgpu.outputs import report as run_report
from tf_mgpu.tools.equivalence.sides import Side

MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Facts:
    task: str
    model: str
    parameters: int
    steps: int
    dtype: str
    tolerance: float
    one: Side
    many: Side
    rows: list[tuple[str, float]]
    first_forward: str | None
    equivalent: bool
    randomness_off: list[str]
    unsynchronized: list[str]
    retrace_differs: bool
    xla_one: jit.Choice
    xla_many: jit.Choice
    memory: tuple[int, int | None]
    own_step: str | None = None  # "Class.train_step" (or compute_loss), when the model's own
    # "layer's variable" the step updates on each replica (not BatchNormalization's)
    per_replica_state: tuple[str, ...] = ()


def causes(facts: Facts) -> list[str]:
    """The likely causes of a difference, most likely first."""
    found = []
    if facts.unsynchronized:
        several = len(facts.unsynchronized) > 1
        found.append(
            f"unsynchronized batch statistics: {replicas.batch_norms(facts.unsynchronized)} "
            f"{'normalise' if several else 'normalises'} each replica's "
            f"{facts.many.per_replica} examples alone; build {'them' if several else 'it'} "
            f"with keras.layers.BatchNormalization(synchronized=True)"
        )
    if facts.per_replica_state:
        several = len(facts.per_replica_state) > 1
        found.append(
            f"state updated on each replica: {', '.join(facts.per_replica_state)} "
            f"{'are' if several else 'is'} updated in the step from each replica's "
            f"{facts.many.per_replica} examples and averaged over the replicas after it, "
            f"which a running statistic survives but a count does not (it ends at 1/"
            f"{facts.many.replicas} of one device's); count with the global batch "
            f"(tf.distribute.get_replica_context().all_reduce) or per example"
        )
    if facts.retrace_differs:
        found.append(
            "randomness outside Keras's seeded ops: two traces of one forward pass disagree "
            "(NumPy or Python random in a layer's call?); draw with keras.random and a "
            "keras.random.SeedGenerator"
        )
    if facts.first_forward and not facts.unsynchronized:
        found.append(
            f"layer {facts.first_forward} computes over the batch it is handed (one replica's "
            f"share): a custom layer reading the per-replica batch (its size, mean or sum); "
            f"compute per example, or all-reduce with tf.distribute's replica context"
        )
    if facts.own_step and not found:
        found.append(
            f"{facts.own_step} runs on each replica and reduces its loss over "
            f"replicas its own way, which check cannot see into: a term it adds to the loss "
            f"(a penalty, say) counts once per replica; divide such terms by "
            f"tf.distribute.get_replica_context().num_replicas_in_sync, as Keras's "
            f"compute_loss does for the compiled loss"
        )
    if not found:
        found.append(
            "the forward pass agrees but the steps do not: an add_loss term or a custom "
            "train step reduced over the replica's batch rather than per example; add "
            "per-example terms, which tf_mgpu reduces over the global batch"
        )
    return found


def table(facts: Facts) -> str:
    one, many = facts.one, facts.many
    held, activations = facts.memory
    memory = f"{_size(held)} weights and optimizer state"
    if activations is not None:
        memory += f", about {_size(activations)} of layer outputs (estimated from their shapes)"
    lines = [
        f"tf_mgpu check: --task={facts.task}  model {facts.model}  "
        f"{facts.parameters:,} parameters  {facts.steps} steps  {facts.dtype}",
        _side("one device", one),
        _side(f"{many.replicas} replicas", many),
        f"  memory per replica  {memory}",
        f"  XLA                 one device: {facts.xla_one.describe()}",
        f"                      {many.replicas} replicas: {facts.xla_many.describe()}",
    ]
    if facts.randomness_off:
        lines.append(f"  randomness off      {', '.join(facts.randomness_off)}")
    worst = max((w for _, w in facts.rows), default=0.0)
    verdict = "EQUIVALENT" if facts.equivalent else "NOT EQUIVALENT"
    lines.append(
        f"  weights             largest difference {worst:.1e} of the layer's scale "
        f"(tolerance {facts.tolerance:.0e}): {verdict}"
    )
    if not facts.equivalent:
        lines.append("  per layer (largest weight difference / scale):")
        for name, difference in facts.rows:
            mark = "  <- first to differ in the forward pass" if name == facts.first_forward else ""
            lines.append(f"    {name:<28}{difference:10.1e}{mark}")
        if facts.first_forward and facts.first_forward not in dict(facts.rows):
            lines.append(f"    first to differ in the forward pass: {facts.first_forward}")
        lines.extend(f"  likely cause: {cause}" for cause in causes(facts))
    return "\n".join(lines)


def _size(count: int) -> str:
    return f"{count / MIB:.1f} MiB" if count >= MIB else f"{count / 1024:.1f} KiB"


def _side(label: str, side: Side) -> str:
    return (
        f"  {label:<20}batch {side.per_replica} x {side.replicas:<4}"
        f"{side.step_seconds * 1000:8.2f} ms/step  "
        f"{run_report.values(side.test, 'test', loss_first=True)}"
    )
