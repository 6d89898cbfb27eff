"""This pod's TF_CONFIG, from its index in a Kubernetes Indexed Job behind a headless Service.

  python -m tf_mgpu.main --strategy=multi_worker_mirrored --cluster_resolver=kubernetes
  eval "$(python -m tf_mgpu.kubernetes)" && exec python your_trainer.py

A Job with `completionMode: Indexed` numbers its pods 0 .. N-1 and sets
JOB_COMPLETION_INDEX in each; the Job controller names pod i's host
`<job>-<i>`, and with `subdomain: <service>` in the pod template and a
headless Service of that name, every pod reaches pod i at `<job>-<i>.<service>`.
So every pod can write the same cluster, worker i at that address, and its
own index. What Kubernetes does not tell a pod, the manifest does:

  TF_MGPU_WORKERS  the Job's completions (and parallelism): how many workers
  TF_MGPU_SERVICE  the headless Service's name, the pod template's subdomain
  TF_MGPU_PORT     the port every worker listens on (default 2222)
  TF_MGPU_JOB      the Job's name; default: this pod's host name without `-<index>`

`examples/kubernetes/indexed-job.yaml` sets them. The Kubeflow training
operator's TFJob needs none of this: it writes TF_CONFIG into every pod
itself, which `--cluster_resolver=tf_config` (the default) reads.

No TensorFlow here: the supervisor parent calls this before it starts the
trainer, and an error is one line before any worker waits for the others.
"""

import json
import os
import socket
from collections.abc import Mapping

from tf_mgpu.errors import UserError

INDEX = "JOB_COMPLETION_INDEX"  # set by Kubernetes in every pod of an Indexed Job
WORKERS = "TF_MGPU_WORKERS"
SERVICE = "TF_MGPU_SERVICE"
PORT = "TF_MGPU_PORT"
JOB = "TF_MGPU_JOB"
DEFAULT_PORT = 2222
_PREFIX = "--cluster_resolver=kubernetes"


def addresses(job: str, service: str, workers: int, port: int = DEFAULT_PORT) -> list[str]:
    """Every worker's host:port, worker i being pod `<job>-<i>` of the headless Service."""
    return [f"{job}-{i}.{service}:{port}" for i in range(workers)]


def spec(environ: Mapping[str, str] = os.environ) -> dict:
    """This pod's TF_CONFIG as a dict; raises UserError in one line naming what is missing."""
    index = _count(
        environ,
        INDEX,
        "is not set, so this is not a pod of an Indexed Job; give "
        "the Job `completionMode: Indexed`, or use --cluster_resolver=tf_config "
        "where something else (a Kubeflow TFJob) sets TF_CONFIG",
        minimum=0,
    )
    workers = _count(
        environ,
        WORKERS,
        "is not set; set it in the pod template to the Job's "
        "completions (see examples/kubernetes/indexed-job.yaml)",
        minimum=1,
    )
    if index >= workers:
        raise UserError(
            f"{_PREFIX}: {INDEX}={index} but {WORKERS}={workers}: the index must be below the "
            f"number of workers; set {WORKERS} to the Job's completions"
        )
    service = environ.get(SERVICE, "").strip()
    if not service:
        raise UserError(
            f"{_PREFIX}: {SERVICE} is not set; set it to the name of the headless Service "
            f"that is the pod template's subdomain"
        )
    port = _count(environ, PORT, "", minimum=1, default=DEFAULT_PORT)
    if port > 65535:
        raise UserError(f"{_PREFIX}: {PORT}={port} is not a port (1 to 65535)")
    job = _job(environ, index)
    return {
        "cluster": {"worker": addresses(job, service, workers, port)},
        "task": {"type": "worker", "index": index},
    }


def tf_config(environ: Mapping[str, str] = os.environ) -> str:
    """This pod's TF_CONFIG (JSON); see `spec`."""
    tf_config = spec(environ)
    return json.dumps(tf_config)


def _count(
    environ: Mapping[str, str], name: str, missing: str, minimum: int, default: int | None = None
) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        if default is not None:
            return default
        raise UserError(f"{_PREFIX}: {name} {missing}")
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise UserError(f"{_PREFIX}: {name}={raw!r} is not an integer >= {minimum}")
    return value


def _job(environ: Mapping[str, str], index: int) -> str:
    """The Job's name: TF_MGPU_JOB, else this pod's host name `<job>-<index>` without its index."""
    job = environ.get(JOB, "").strip()
    if job:
        return job
    host = (environ.get("HOSTNAME") or socket.gethostname()).split(".")[0]
    suffix = f"-{index}"
    if not host.endswith(suffix) or len(host) == len(suffix):
        raise UserError(
            f"{_PREFIX}: this pod's host name {host!r} is not `<job>-{index}`, as the Job "
            f"controller names pod {index} of an Indexed Job; set {JOB} to the Job's name "
            f"(and leave the pod template's hostname unset)"
        )
    return host[: -len(suffix)]
