"""Which task this process is, read from TF_CONFIG.

TF_CONFIG is the standard cluster spec that Kubernetes operators, Slurm
wrappers and people set for tf.distribute; MultiWorkerMirroredStrategy reads
it itself. This module reads the same variable first, without TensorFlow, so
that a malformed one is reported in one line before any worker starts
waiting for others.
"""

import dataclasses
import json
import os
from collections.abc import Mapping

from tf_mgpu.errors import UserError

_EXAMPLE = (
    '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
_TASK_TYPES = ("chief", "worker")


@dataclasses.dataclass(frozen=True)
class Node:
    """This process's place in the cluster; a lone process is worker 0 of 1."""

    type: str = "worker"
    index: int = 0
    addresses: tuple[str, ...] = ()  # every task's host:port, chief first
    has_chief: bool = False

    @property
    def num_workers(self) -> int:
        return max(1, len(self.addresses))

    @property
    def is_chief(self) -> bool:
        """The one task that prints epoch lines and writes into --model_dir."""
        if self.has_chief:
            return self.type == "chief"
        return self.index == 0

    @property
    def address(self) -> str | None:
        """This task's own 'host:port', where its gRPC server listens; None alone."""
        if not self.addresses:
            return None
        return self.addresses[0 if self.type == "chief" else self.index + self.has_chief]

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"


def _fail(problem: str) -> None:
    raise UserError(f"TF_CONFIG {problem}; expected e.g. {_EXAMPLE}")


def node_from_env(environ: Mapping[str, str] = os.environ) -> Node:
    """Parses and checks TF_CONFIG; without it, this process is a cluster of one.

    Raises UserError naming what is wrong, for anything
    MultiWorkerMirroredStrategy would reject or hang on.
    """
    raw = environ.get("TF_CONFIG", "").strip()
    if not raw:
        return Node()
    try:
        spec = json.loads(raw)
    except json.JSONDecodeError as e:
        raise UserError(f"TF_CONFIG is not valid JSON ({e}); expected e.g. {_EXAMPLE}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("cluster"), dict):
        _fail("has no 'cluster' object")
    cluster = spec["cluster"]
    unsupported = sorted(set(cluster) - set(_TASK_TYPES))
    if unsupported:
        _fail(
            f"names task types {unsupported}; MultiWorkerMirroredStrategy takes only "
            f"'chief' and 'worker' (no parameter servers, no evaluator)"
        )
    for task_type in cluster:
        hosts = cluster[task_type]
        if not isinstance(hosts, list) or not hosts:
            _fail(f"cluster '{task_type}' must be a non-empty list of 'host:port' strings")
        for host in hosts:
            if not _is_address(host):
                _fail(f"cluster '{task_type}' has {host!r}, which is not 'host:port'")
            port = int(host.rpartition(":")[2])
            if not 1 <= port <= 65535:
                _fail(f"cluster '{task_type}' has {host!r}: port {port} is out of range (1-65535)")
    if len(cluster.get("chief", [])) > 1:
        _fail(f"names {len(cluster['chief'])} chiefs; a cluster has at most one")
    addresses = tuple(cluster.get("chief", []) + cluster.get("worker", []))
    if len(set(addresses)) != len(addresses):
        _fail(f"lists an address twice in {list(addresses)}")
    task = spec.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        _fail("has no 'task' object with 'type' and 'index'")
    task_type, index = task["type"], task["index"]
    if task_type not in cluster:
        _fail(f"task type {task_type!r} is not in the cluster ({', '.join(sorted(cluster))})")
    if not isinstance(index, int) or isinstance(index, bool):
        _fail(f"task index {index!r} is not an integer")
    count = len(cluster[task_type])
    if not 0 <= index < count:
        _fail(f"task index {index} is out of range: the cluster has {count} '{task_type}' tasks")
    return Node(type=task_type, index=index, addresses=addresses, has_chief="chief" in cluster)


def _is_address(host: object) -> bool:
    if not isinstance(host, str) or ":" not in host:
        return False
    name, _, port = host.rpartition(":")
    return bool(name) and port.isdigit()
