"""Elastic restarts: a group that goes on with fewer workers, at the same global batch.

The launcher's `--workers=MIN:MAX` starts MAX workers; after a failure it
restarts (within --max_restarts) without the worker that failed first, taken
as lost for good, while at least MIN remain (`next_size`). Each worker gets
main's `--batch_workers=MAX`: --batch_size is then per replica for a cluster of
MAX workers, and on another worker count each replica takes the share of the
same global batch (`per_replica_batch`). The data order depends only on the
seed and the global batch (`tf_mgpu.engine.input.data.epoch_order`; replica r takes
the r-th run of each step's examples), so the resumed run trains on the same
examples in the same steps, and the checkpoint's fingerprint, which holds the
global batch, accepts it. No TensorFlow here: the launcher and main's checks
before TensorFlow use it.
"""

from tf_mgpu.errors import UserError

BATCH_FLAG = "batch_workers"  # tf_mgpu.main's flag


def parse_workers(text: str) -> tuple[int, int]:
    """--workers' value: 'N' or 'MIN:MAX', as (MIN, MAX); ValueError saying what is wrong."""
    minimum, colon, maximum = str(text).strip().partition(":")
    numbers = [_positive(minimum), _positive(maximum)] if colon else [_positive(minimum)] * 2
    if numbers[0] > numbers[1]:
        raise ValueError(f"MIN {numbers[0]} is above MAX {numbers[1]}")
    return numbers[0], numbers[1]


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not N or MIN:MAX (positive integers)") from None
    if number < 1:
        raise ValueError(f"{number} is not a positive integer")
    return number


def next_size(size: int, minimum: int) -> int:
    """The group's size after a restarted failure: the failed worker is taken as lost (its
    machine, its GPU, its memory), down to `minimum`; at `minimum` the group restarts whole."""
    return max(minimum, size - 1)


def per_replica_batch(batch_size: int, batch_workers: int | None, workers: int) -> int:
    """The per-replica batch on a cluster of `workers`: `batch_size` itself, or with
    `batch_workers` (--batch_size is for that many workers) the share of the same global
    batch. Every worker is taken to hold as many replicas as in that cluster (one on CPUs,
    its GPUs otherwise). UserError, one line, when the share is not whole."""
    if batch_workers is None or batch_workers == workers:
        return batch_size
    examples = batch_size * batch_workers  # per replica of each worker, over the cluster
    if examples % workers:
        raise UserError(
            f"--batch_size={batch_size} per replica on --{BATCH_FLAG}={batch_workers} workers "
            f"does not split evenly over {workers} workers ({batch_size} x {batch_workers} = "
            f"{examples} is not a multiple of {workers}); run on a worker count that divides "
            f"{examples}, or choose another --batch_size"
        )
    return examples // workers
