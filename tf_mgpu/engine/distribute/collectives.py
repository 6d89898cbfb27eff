"""The collectives that keep workers in step, outside the training step itself.

Under MultiWorkerMirroredStrategy each of these is an all-reduce: every
worker must call it at the same point, or the others wait for it. Elsewhere
they return at once.
"""

import contextlib
import hashlib

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.engine.distribute import strategies
from tf_mgpu.errors import Failure, UserError

# What a collective raises on the survivors when a peer dies, freezes or
# becomes unreachable (TensorFlow's coordination service notices missing
# heartbeats within seconds and aborts every pending collective): the network's
# own errors, and two general ones a disk may raise too.
NETWORK_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.AbortedError,
    tf.errors.CancelledError,
    tf.errors.DeadlineExceededError,
)
PEER_ERRORS = (*NETWORK_ERRORS, tf.errors.InternalError, tf.errors.UnknownError)


def check_same_start(strategy: tf.distribute.Strategy, step: int) -> None:
    """Under MultiWorkerMirroredStrategy: every worker starts from the same step, or none does."""
    if strategies.name_of(strategy) != "multi_worker_mirrored":
        return
    here = float(step)
    if _spread(strategy, here) != 0:
        # Every worker sees the same sum and refuses; none may exit while a peer still
        # fetches its piece of that sum (see finish_together).
        finish_together(strategy)
        raise UserError(
            f"the workers restored different checkpoints (this one is at step {int(here)}); "
            f"every worker must read the chief's --model_dir (shared storage across machines)"
        )


def _spread(strategy: tf.distribute.Strategy, value: float) -> float:
    """The sum over every replica of |value - the first replica's value|: 0 exactly when
    every worker holds the same value (a sum alone passes a worker at the others' mean)."""

    @tf.function
    def spread(value: tf.Tensor) -> tf.Tensor:
        def replica() -> tf.Tensor:
            context = tf.distribute.get_replica_context()
            first = tf.cast(tf.equal(context.replica_id_in_sync_group, 0), tf.float64)
            reference = context.all_reduce(tf.distribute.ReduceOp.SUM, value * first)
            return tf.abs(value - reference)

        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica), axis=None)

    return float(spread(tf.constant(value, tf.float64)))


def finish_together(strategy: tf.distribute.Strategy) -> None:
    """Under MultiWorkerMirroredStrategy: one last all-reduce before any worker exits.

    A worker leaves a collective once it has every piece, while a peer may
    still be fetching that worker's last piece; if the first then exits (this
    program ends with `os._exit`, skipping TensorFlow's shutdown barrier), the
    peer fails with "Socket closed" in a collective that mattered (seen 1 run
    in about 10). After this one, nothing depends on a peer any more: a peer
    error here only means the others finished first, so it is ignored.
    """
    if strategies.name_of(strategy) != "multi_worker_mirrored":
        return

    with contextlib.suppress(*PEER_ERRORS):
        strategies.replica_sum(strategy)(1.0)


def same_weights_everywhere(strategy: tf.distribute.Strategy, num_workers: int, digest: str) -> int:
    """The number of workers that hold exactly these weights: all of them, or this raises.

    Only the chief reports it, so the others stay quiet.
    """
    if not same_everywhere(strategy, digest):
        raise Failure(
            f"the workers ended with different weights (this one: sha256={digest}); "
            f"this is a bug in tf_mgpu, please report it with the workers' logs"
        )
    return num_workers if strategies.name_of(strategy) == "multi_worker_mirrored" else 1


def same_everywhere(strategy: tf.distribute.Strategy, text: str) -> bool:
    """Whether every worker holds this same `text` (True at once outside
    MultiWorkerMirroredStrategy); see `SameTextCheck`, to ask more than once."""
    return SameTextCheck(strategy)(text)


class SameTextCheck:
    """`check(text)`: whether every worker holds this same `text` (True at once outside
    MultiWorkerMirroredStrategy). Collective: every worker must ask at the same point.

    The sha256 of each worker's `text` is cut into 16-bit numbers; summing them and their
    squares over the replicas gives zero variance exactly when every worker's digest is
    the same (the sums are exact in float64). The all-reduce is traced once.
    """

    def __init__(self, strategy: tf.distribute.Strategy):
        self._strategy = strategy
        multi = strategies.name_of(strategy) == "multi_worker_mirrored"
        self._sum = strategies.replica_sum(strategy) if multi else None
        self._count = strategy.num_replicas_in_sync

    def __call__(self, text: str) -> bool:
        if self._sum is None:
            return True
        digest = hashlib.sha256(text.encode()).hexdigest()
        parts = [int(digest[i : i + 4], 16) for i in range(0, len(digest), 4)]
        sums = self._sum(parts + [p * p for p in parts])
        first, squares = sums[: len(parts)], sums[len(parts) :]
        same = all(self._count * sq == s * s for s, sq in zip(first, squares, strict=True))
        if not same:
            # Every worker sees the same answer and its caller fails; none may exit while
            # a peer still fetches its piece of these sums (see finish_together).
            finish_together(self._strategy)
        return same


def weights_digest(model: keras.Model) -> str:
    """The sha256 of every weight's bytes, in order: what workers compare, and the summary
    records."""
    digest = hashlib.sha256()
    for weight in model.weights:
        # Hashed where it lies (no bytes copy): a weight of gigabytes costs one copy, not two.
        array = np.ascontiguousarray(keras.ops.convert_to_numpy(weight))
        # Its bytes seen as uint8 (a buffer of bfloat16, ml_dtypes' type, cannot be cast).
        digest.update(memoryview(array.view(np.uint8)))
    return digest.hexdigest()


def barrier(strategy: tf.distribute.Strategy) -> None:
    """Under MultiWorkerMirroredStrategy: returns once every worker has reached it."""
    if strategies.name_of(strategy) == "multi_worker_mirrored":
        strategies.replica_sum(strategy)(0.0)
