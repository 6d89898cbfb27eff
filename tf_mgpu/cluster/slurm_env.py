"""This task's TF_CONFIG, from the Slurm job step it runs in, by TensorFlow's SlurmClusterResolver.

  srun -n2 --kill-on-bad-exit=1 python -m tf_mgpu.main --strategy=multi_worker_mirrored \\
      --cluster_resolver=slurm
  srun bash -c 'eval "$(python -m tf_mgpu.slurm)" && exec python your_trainer.py'

`tf.distribute.cluster_resolver.SlurmClusterResolver` reads the step's
variables (SLURM_PROCID, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE):
task i of the step becomes worker i, at `node:port_base + its index on
the node`, nodes taken in sorted order. `python -m tf_mgpu.slurm` prints
`export` lines for TF_CONFIG (and CUDA_VISIBLE_DEVICES where it splits a
node's GPUs among tasks), for a shell to `eval`.

The resolver runs in that short-lived subprocess, not in the caller: the
caller is the supervisor parent (`tf_mgpu.cluster.supervisor`), which never imports
TensorFlow, so that it stays small and handles signals at once while the
trainer waits for peers. Reimplementing the resolver without TensorFlow
would be the other way out, but then this would be our reading of Slurm's
variables, not TensorFlow's. The step's variables are checked here first,
without TensorFlow, so a run outside Slurm fails in one line at once. The
price is one more TensorFlow import per task at start (about 5 s here).

GPUs: the resolver counts them with nvidia-smi, which raises
FileNotFoundError on a machine without one, and it cannot build a cluster
from zero GPUs per node (a `range()` with step 0). So the count is passed
explicitly: the GPUs this task sees (Slurm's CUDA_VISIBLE_DEVICES, else
every GPU nvidia-smi lists). Where there is at least one per task of the
busiest node, the resolver splits them among the node's tasks as
TensorFlow documents (auto_set_gpu). Otherwise (a CPU node, or Slurm bound
fewer GPUs to each task than there are tasks per node) the resolver gets
one placeholder slot per task, only to form the cluster: nothing of it
reaches the trainer, TF_CONFIG holds addresses only, CUDA_VISIBLE_DEVICES
stays as it was, and the trainer counts its own devices.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping

from tf_mgpu.cluster import ports
from tf_mgpu.errors import UserError

# What SlurmClusterResolver reads; srun sets all of them for every task of a step.
STEP_VARIABLES = (
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
)
RESOLVE_TIMEOUT = 120.0  # seconds; importing TensorFlow takes most of it
_NO_GPU = ("", "-1", "NoDevFiles")  # CUDA stops at the first invalid entry; Slurm's "none"


def check_step(environ: Mapping[str, str] = os.environ) -> None:
    """Raises UserError unless `environ` is that of a task of a Slurm job step."""
    missing = [name for name in STEP_VARIABLES if not environ.get(name)]
    if missing:
        raise UserError(
            f"--cluster_resolver=slurm: {', '.join(missing)} not set, so this is not a task "
            f"of a Slurm job step; start every task with srun (e.g. `srun -n2 python -m "
            f"tf_mgpu.main --cluster_resolver=slurm ...`), or use --cluster_resolver=tf_config"
        )


def environment(port_base: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables this task of a Slurm step trains with: TF_CONFIG, maybe CUDA_VISIBLE_DEVICES.

    Runs `python -m tf_mgpu.slurm` (TensorFlow's resolver) in a subprocess with
    `environ`; raises UserError in one line when `environ` is not a Slurm
    step's or the resolver fails.
    """
    check_step(environ)
    command = [sys.executable, "-m", "tf_mgpu.slurm", f"--slurm_port_base={port_base}"]
    try:
        done = subprocess.run(
            command,
            env=dict(environ),
            capture_output=True,
            text=True,
            timeout=RESOLVE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise UserError(
            f"--cluster_resolver=slurm: TensorFlow's SlurmClusterResolver gave no answer in "
            f"{RESOLVE_TIMEOUT:g} s; run `python -m tf_mgpu.slurm` in the same step to see why"
        ) from None
    if done.returncode != 0:
        raise UserError(_failure(done))
    return _parse_exports(done.stdout)


def tf_config(port_base: int, environ: Mapping[str, str] = os.environ) -> str:
    """This task's TF_CONFIG (JSON), built by SlurmClusterResolver; see `environment`.

    Only TF_CONFIG: where the resolver splits a node's GPUs among its tasks,
    `environment` also has the CUDA_VISIBLE_DEVICES that does it.
    """
    return environment(port_base, environ)["TF_CONFIG"]


def _failure(done: subprocess.CompletedProcess) -> str:
    """The resolver subprocess's one error line, or its last line if it crashed."""
    lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}, no output"]
    prefix = "tf_mgpu: error: "
    ours = [line[len(prefix) :] for line in lines if line.startswith(prefix)]
    if ours:
        return ours[-1]
    return f"--cluster_resolver=slurm: `python -m tf_mgpu.slurm` failed: {lines[-1]}"


def _parse_exports(text: str) -> dict[str, str]:
    variables = {}
    for line in text.splitlines():
        if line.startswith("export "):
            name, _, value = shlex.split(line)[1].partition("=")
            variables[name] = value
    if "TF_CONFIG" not in variables:
        raise UserError(f"--cluster_resolver=slurm: the resolver printed no TF_CONFIG: {text!r}")
    return variables


def resolve(port_base: int) -> dict[str, str]:
    """Runs SlurmClusterResolver in this process, on os.environ (it reads and sets that).

    Returns TF_CONFIG, and CUDA_VISIBLE_DEVICES where the node's GPUs are
    split among its tasks. Imports TensorFlow: call it in a subprocess.
    """
    check_step()
    import tensorflow as tf

    gpus = visible_gpus(os.environ)
    try:
        options = _gpu_options(gpus)
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=port_base, **options
        )
        cluster = resolver.cluster_spec().as_dict()
    except (RuntimeError, ValueError) as e:
        message = str(e).replace("\n", " ")
        raise UserError(
            f"--cluster_resolver=slurm: SlurmClusterResolver failed: {message}"
        ) from None
    task_type, index = resolver.get_task_info()
    address = cluster[task_type][index]
    _check_address(address, port_base)
    _check_port_free(address)
    spec = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    variables = {"TF_CONFIG": json.dumps(spec)}
    if options["auto_set_gpu"]:
        # The resolver numbers the GPUs this task sees from 0; under Slurm those may be
        # e.g. GPUs 2 and 3 of the node, so its "1" means the second entry, "3".
        chosen = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
        variables["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[int(i)] for i in chosen)
    return variables


def _gpu_options(gpus: list[str]) -> dict:
    """SlurmClusterResolver's GPU arguments: TensorFlow's split where every task gets a GPU.

    Otherwise one placeholder slot per task of the step, which only lets the
    resolver form the cluster (see the module's docstring).
    """
    from tf_mgpu import internals

    # The resolver's own parser of e.g. "2(x3),1": tasks per node, in node order.
    per_node = os.environ["SLURM_STEP_TASKS_PER_NODE"]
    if len(gpus) >= max(internals.slurm_tasks_per_node(per_node)):
        return {"gpus_per_node": len(gpus), "auto_set_gpu": True}
    slots = int(os.environ["SLURM_STEP_NUM_TASKS"])
    return {"gpus_per_node": slots, "gpus_per_task": 1, "auto_set_gpu": False}


def visible_gpus(environ: Mapping[str, str]) -> list[str]:
    """The GPUs this task may use, as CUDA_VISIBLE_DEVICES names them; [] on a CPU node.

    Slurm's CUDA_VISIBLE_DEVICES where set (an empty one hides every GPU;
    the resolver would count it as one), else every GPU nvidia-smi lists.
    """
    if "CUDA_VISIBLE_DEVICES" in environ:
        gpus = []
        for entry in environ["CUDA_VISIBLE_DEVICES"].split(","):
            if entry.strip() in _NO_GPU:
                break
            gpus.append(entry.strip())
        return gpus
    if shutil.which("nvidia-smi", path=environ.get("PATH")) is None:
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        listed = subprocess.CompletedProcess(e, 1, "", str(e))
    if listed.returncode != 0:
        output = (listed.stderr or listed.stdout).strip().replace("\n", " ")
        raise UserError(
            f"--cluster_resolver=slurm: `nvidia-smi --list-gpus` failed ({output}); fix the "
            f"driver, or set CUDA_VISIBLE_DEVICES (empty to train on the CPU)"
        )
    count = sum(line.startswith("GPU ") for line in listed.stdout.splitlines())
    return [str(i) for i in range(count)]


def _check_address(address: str, port_base: int) -> None:
    """The resolver assumes Slurm's block distribution over nodes in sorted order; check it.

    Otherwise (srun --distribution=cyclic, or nodes n9 and n10) it gives a
    task another task's address, and the workers would wait for each other
    until --startup_timeout.
    """
    node, local = os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_LOCALID")
    if node is None or local is None:
        return
    expected = f"{node}:{port_base + int(local)}"
    if address != expected:
        raise UserError(
            f"--cluster_resolver=slurm: SlurmClusterResolver gave task "
            f"{os.environ['SLURM_PROCID']} the address {address}, but it runs as {expected}: "
            f"the resolver needs tasks in block order over nodes in sorted order; use srun "
            f"--distribution=block, or set TF_CONFIG yourself with --cluster_resolver=tf_config"
        )


def _check_port_free(address: str) -> None:
    """Fails now, in one line, where gRPC would fail to bind later (or share the port)."""
    node, _, port = address.rpartition(":")
    error = ports.bind_error(int(port))
    if error is not None:
        raise UserError(
            f"--cluster_resolver=slurm: port {port} on {node} is taken ({error.strerror}); each "
            f"task listens on --slurm_port_base + its index on the node, so pick another "
            f"--slurm_port_base, or {ports.finding(int(port))}"
        )
