"""Expected ways for training to fail, each turned into its one line: out of memory, a
diverged loss, a lost peer, a full or read-only disk."""

import contextlib
import re

import tensorflow as tf

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
        raise UserError(out_of_memory(config, trainer)) from None
    except Diverged as e:
        kept = checkpoints.latest or "none was saved"
        raise Diverged(f"{e}; the last good checkpoint is kept: {kept}") from None
    except collectives.PEER_ERRORS as e:
        if node.num_workers <= 1:
            raise
        raise PeerLost(_lost_peer(e, node, checkpoints)) from None
    except OSError as e:  # metrics.jsonl: a full or read-only disk
        raise UserError(
            checkpoints.cannot_write(f"into --model_dir={config.model_dir}", e)
        ) from None


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


def out_of_memory(config: Config, trainer: Trainer) -> str:
    """The one line for a run that ran out of device memory, naming the batch and the fixes."""
    replicas = trainer.global_batch // trainer.per_replica
    return (
        f"out of memory at a global batch of {trainer.global_batch} "
        f"({config.batch_size} per replica x {replicas} replicas x "
        f"{config.accumulation_steps} accumulation steps); lower --batch_size, or raise "
        f"--accumulation_steps to keep the global batch with less memory per step"
    )
