"""Checks of the user's inputs that need no TensorFlow, made before it loads.

Importing TensorFlow takes about 6 s; a typo in --model_dir, --manual_dir or
TF_CONFIG should not. `tf_mgpu.main` runs these first (TF_CONFIG itself is
checked by `tf_mgpu.cluster.tf_config`), and the library runs them again for callers
that skip main. Nothing here imports TensorFlow.
"""

import os

from tf_mgpu.cluster import ports, tf_config
from tf_mgpu.config import STRATEGIES
from tf_mgpu.errors import UserError


def model_dir(path: str | None) -> None:
    """Creates `path` and checks it is a writable folder; None means write nothing."""
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--model_dir={path} is a file; choose a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(
            f"--model_dir={path} cannot be created ({e.strerror}); choose a folder you can write to"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--model_dir={path} is not writable; choose a folder you can write to")


def strategy(name: str, node: tf_config.Node, num_cpu_devices: int = 1) -> str:
    """The strategy to build for `name` in this cluster.

    `mirrored` means "mirror over every device I am given": when TF_CONFIG
    names several tasks, those devices span machines, so it becomes
    `multi_worker_mirrored`. Single-device strategies cannot span a cluster;
    running them on every task would train independent models that overwrite
    each other's outputs, so that is refused. So is `num_cpu_devices` > 1 in
    a cluster: MultiWorkerMirroredStrategy runs one replica per GPU, or one
    per worker on CPUs, whatever the logical devices.
    """
    if name not in STRATEGIES:
        raise UserError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if node.num_workers == 1:
        return name
    if num_cpu_devices > 1:
        raise UserError(
            f"--num_cpu_devices={num_cpu_devices} cannot apply under TF_CONFIG: "
            f"MultiWorkerMirroredStrategy runs one replica per GPU, or one per worker on "
            f"CPUs; drop the flag, or unset TF_CONFIG to mirror over {num_cpu_devices} CPUs"
        )
    if name in ("mirrored", "multi_worker_mirrored"):
        return "multi_worker_mirrored"
    raise UserError(
        f"--strategy={name} trains on one device, but TF_CONFIG names {node.num_workers} "
        f"tasks; use --strategy=multi_worker_mirrored, or unset TF_CONFIG"
    )


def own_port(node: tf_config.Node) -> None:
    """UserError, in one line naming the port, if this task cannot listen on its TF_CONFIG
    address: TensorFlow's gRPC server would fail there ("Could not start gRPC server")."""
    if node.address is None:
        return
    error = ports.bind_error(int(node.address.rpartition(":")[2]))
    if error is not None:
        raise UserError(ports.taken(f"TF_CONFIG gives {node}", node.address, error))
