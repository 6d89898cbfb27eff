"""Expected ways for training to fail, each turned into its one line: out of memory, a
diverged loss, a lost peer, a full or read-only disk."""

import contextlib
import re

import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.cluster import tf_config
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.errors import Diverged, PeerLost, UserError

_TASK_NAME = re.compile(r"/job:(\w+)/(?:replica:\d+/)?task:(\d+)")


@contextlib.contextmanager
def as_one_line(
    config: Config, trainer: Trainer, checkpoints: checkpoint.Checkpoints, node: tf_config.Node
):
    """Expected ways for training to fail, each turned into its one line."""
    try:
        yield
    except tf.errors.ResourceExhaustedError:
        where = f" on {node}" if node.num_workers > 1 else ""
        raise _told_to_peers(node, UserError(out_of_memory(config, trainer, where))) from None
    except Diverged as e:
        kept = checkpoints.latest or "none was saved"
        raise Diverged(f"{e}; the last good checkpoint is kept: {kept}") from None
    except collectives.PEER_ERRORS as e:
        if node.num_workers <= 1:
            raise
        told = _told(e)
        if told is not None:  # a peer's own error, the same line on every worker
            raise UserError(told) from None
        raise PeerLost(_lost_peer(e, node, checkpoints)) from None
    except OSError as e:  # metrics.jsonl: a full or read-only disk
        line = checkpoints.cannot_write(f"into --model_dir={config.model_dir}", e)
        raise _told_to_peers(node, UserError(line)) from None


# How a worker's own error reaches the others: TensorFlow's coordination service aborts
# their pending collectives with the message it was given ("Collective ops is aborted by:
# Error reported from /job:worker/task:1: <it>"), so every worker ends with one line.
_TOLD = "tf_mgpu peer error: "
_TOLD_LINE = re.compile(re.escape(_TOLD) + r"(.*)")


def _told_to_peers(node: tf_config.Node, error: UserError) -> UserError:
    """`error`, once handed to the other workers (under MultiWorkerMirroredStrategy), whose
    collectives then fail with its line (`_told`) instead of a lost peer."""
    if node.num_workers > 1:
        # A worker whose peers are gone already cannot tell them: it still ends as itself.
        with contextlib.suppress(tf.errors.OpError, ValueError):
            internals.report_error_to_cluster(_TOLD + str(error))
    return error


def _told(error: Exception) -> str | None:
    """The line another worker's error told this one, if that is why its collective failed."""
    found = _TOLD_LINE.search(str(error))
    return found.group(1).strip() if found else None


def _lost_peer(error: Exception, node: tf_config.Node, checkpoints: checkpoint.Checkpoints) -> str:
    """One line naming the task that went away, from TensorFlow's error message."""
    names = {f"{kind}:{index}" for kind, index in _TASK_NAME.findall(str(error))} - {str(node)}
    peers = ", ".join(sorted(names)) or "a peer"
    last = checkpoints.latest or "none yet"
    reason = str(error).strip().splitlines()[0][:120]
    return (
        f"{node} lost {peers} during training ({type(error).__name__}: {reason}); last "
        f"checkpoint: {last}. Rerun the same command on every worker to resume"
    )


def out_of_memory(config: Config, trainer: Trainer, where: str = "") -> str:
    """The one line for a run that ran out of device memory (`where`: on which worker),
    naming the batch and the fixes."""
    replicas = trainer.global_batch // trainer.per_replica
    return (
        f"out of memory{where} at a global batch of {trainer.global_batch} "
        f"({config.batch_size} per replica x {replicas} replicas x "
        f"{config.accumulation_steps} accumulation steps); lower --batch_size, or raise "
        f"--accumulation_steps to keep the global batch with less memory per step"
    )
