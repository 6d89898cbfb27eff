"""This machine's GPUs, split among the launcher's local workers as torchrun's
`--nproc-per-node` splits them: each worker its own, none shared.

A worker's MirroredStrategy takes every GPU it sees, so two local workers seeing all
of them would put two replicas on each GPU. Each worker is started with
`CUDA_VISIBLE_DEVICES` naming its own equal share, in order: with 4 GPUs and 2
workers, worker 0 sees 0,1 and worker 1 sees 2,3 (MultiWorkerMirroredStrategy wants
as many replicas on every worker). GPUs left over (5 on 2 workers) are unused, and
the launcher says so.

Which GPUs: those `CUDA_VISIBLE_DEVICES` names, if set (its entries as given, indices
or UUIDs); else every NVIDIA GPU the driver lists (/proc/driver/nvidia/gpus, one folder
per PCI address), numbered in PCI bus order, which `CUDA_DEVICE_ORDER=PCI_BUS_ID` makes
CUDA's order too. No TensorFlow: the launcher imports none. Untested on real GPUs here
(there are none); the tests name GPUs through `CUDA_VISIBLE_DEVICES`.
"""

import os
from collections.abc import Mapping

from tf_mgpu.errors import UserError

VISIBLE = "CUDA_VISIBLE_DEVICES"
ORDER = "CUDA_DEVICE_ORDER"
_DRIVER = "/proc/driver/nvidia/gpus"


def visible(env: Mapping[str, str] | None = None, driver: str | None = None) -> list[str]:
    """The GPUs the launcher may hand out, as `CUDA_VISIBLE_DEVICES` entries."""
    env = os.environ if env is None else env
    driver = driver or _DRIVER
    if VISIBLE in env:
        return [entry.strip() for entry in env[VISIBLE].split(",") if entry.strip()]
    if not os.path.isdir(driver):
        return []
    return [str(i) for i in range(len(os.listdir(driver)))]


def shares(gpus: list[str], workers: int) -> list[list[str]] | None:
    """Each worker's own GPUs (None: no GPU, nothing to set). Refuses more workers than GPUs:
    a worker without one would train on the CPU, as slow as its peers then wait."""
    if not gpus:
        return None
    each = len(gpus) // workers
    if each == 0:
        raise UserError(
            f"{workers} workers cannot each have one of this machine's {len(gpus)} GPUs "
            f"({VISIBLE}={','.join(gpus)}): pass --workers={len(gpus)} or fewer, or "
            f"{VISIBLE}= to train on the CPU"
        )
    return [gpus[rank * each : (rank + 1) * each] for rank in range(workers)]


def environment(share: list[str] | None, env: Mapping[str, str]) -> dict[str, str]:
    """What a worker's environment adds: its own GPUs, numbered in PCI bus order where the
    launcher numbered them (the user's own `CUDA_VISIBLE_DEVICES` keeps the user's order)."""
    if share is None:
        return {}
    added = {VISIBLE: ",".join(share)}
    if VISIBLE not in env and ORDER not in env:
        added[ORDER] = "PCI_BUS_ID"
    return added


def unused_line(gpus: list[str], shares_: list[list[str]] | None) -> str | None:
    """The launcher's line about GPUs no worker was given, if any."""
    if shares_ is None:
        return None
    given = sum(len(share) for share in shares_)
    if given == len(gpus):
        return None
    left = gpus[given:]
    return (
        f"{len(left)} of {len(gpus)} GPUs unused ({','.join(left)}): each of "
        f"{len(shares_)} workers takes {given // len(shares_)}, as many on every worker"
    )
