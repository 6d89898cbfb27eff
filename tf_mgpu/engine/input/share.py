"""Which rows each replica and each worker read: one rule for every kind of split.

Step k of an epoch reads the run `k * B .. (k + 1) * B - 1` of the epoch's order (B the global
batch); replica r, counting every replica of every worker, takes the r-th run of b = B /
replicas positions of it. A worker's input pipeline serves its own replicas, `first` to
`first + here - 1`. Arrays held on the devices (`step/loop.py`), arrays and sources read by
index (`arrays`, `source`), arrays in tf.data pipelines (`data`) and tf.data splits
(`stream_shard`) all read by this rule, so N replicas on any number of workers take the
examples one device would, in the same order.
"""

import dataclasses

import tensorflow as tf


def real_rows(examples: int, global_batch: int, per_replica: int, replica: int) -> int:
    """How many of replica `replica`'s rows at an evaluation pass's last step are examples.

    A pass over `examples` examples runs whole global batches, the last one padded at its
    end; by the rule above its real rows are a prefix of each replica's run, so a replica
    holds `per_replica` of them, some, or none."""
    last = examples - (-(-examples // global_batch) - 1) * global_batch
    return max(0, min(per_replica, last - replica * per_replica))


def rows(step, replica, global_batch: int, per_replica: int) -> tf.Tensor:
    """Positions, within the epoch's order, of replica `replica`'s examples at step `step`:
    static in size, so XLA compiles it once whatever the step."""
    start = step * global_batch + replica * per_replica
    return start + tf.range(per_replica, dtype=tf.int64)


@dataclasses.dataclass(frozen=True)
class Share:
    """This input pipeline's (worker's) share of each global batch."""

    global_batch: int
    per_replica: int  # b: examples per replica per step
    here: int  # replicas this pipeline serves
    first: int  # the first of them, counting every worker's replicas
    pipelines: int  # input pipelines (workers) in all
    pipeline: int  # this one's index

    @classmethod
    def of(cls, context: tf.distribute.InputContext, global_batch: int) -> "Share":
        here = context.num_replicas_in_sync // context.num_input_pipelines
        return cls(
            global_batch=global_batch,
            per_replica=context.get_per_replica_batch_size(global_batch),
            here=here,
            first=context.input_pipeline_id * here,
            pipelines=context.num_input_pipelines,
            pipeline=context.input_pipeline_id,
        )

    def positions(self, t) -> tf.Tensor:
        """Positions within its epoch of this pipeline's `t`-th per-replica batch, counting
        `here` of them per step (its replicas in order)."""
        return rows(t // self.here, self.first + t % self.here, self.global_batch, self.per_replica)

    @property
    def layout(self) -> str:
        """`<workers>x<replicas per worker>`: what a saved iterator position is valid for."""
        return f"{self.pipelines}x{self.here}"
