"""--cluster_resolver=slurm: TF_CONFIG from a Slurm job step, by TensorFlow's resolver.

The end-to-end test runs a real one-node Slurm cluster (`tests/slurm_cluster.py`)
and trains one model with `srun -n2`; it is skipped only where Slurm is not
installed. The unit tests below it give the resolver the variables of
steps a one-node cluster cannot make (two nodes, GPUs), in this process.
"""

import json
import os
import socket

import pytest

from tests import slurm_cluster, support
from tf_mgpu import errors
from tf_mgpu.cluster import local, slurm_env
from tf_mgpu.errors import UserError

pytestmark = pytest.mark.cluster

TRAIN_ARGS = (
    "--strategy=multi_worker_mirrored",
    "--epochs=2",
    "--batch_size=32",
    "--learning_rate=0.1",
    "--train_split=train[:2048]",
    "--test_split=test[:512]",
    "--steps_per_loop=16",
    "--startup_timeout=60",
)


@pytest.fixture(scope="module")
def slurm_up(tmp_path_factory):
    """A one-node Slurm cluster of 2 CPUs, up for this file's tests, stopped after them."""
    missing = slurm_cluster.missing_binaries()
    if missing:
        pytest.skip(
            f"Slurm is not installed (no {', '.join(missing)}); `apt-get install "
            f"--no-install-recommends slurmctld slurmd slurm-client munge` runs these tests"
        )
    with slurm_cluster.SlurmCluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def free_port_base(tasks: int) -> int:
    """A port p such that p, p + 1, ... p + tasks - 1 are all free now."""
    for _ in range(100):
        base = local.free_ports(1)[0]
        if base + tasks <= 65000 and all(_free(base + i) for i in range(tasks)):
            return base
    raise AssertionError(f"found no {tasks} consecutive free ports")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def test_srun_two_tasks_train_one_model_like_tf_config(slurm_up, tmp_path, mnist_data_dir):
    base = free_port_base(2)
    srun = ["srun", "-n2", "--kill-on-bad-exit=1", "--label", f"--chdir={support.ROOT}"]
    done = slurm_up.run(
        srun
        + support.main_command(
            *TRAIN_ARGS,
            "--cluster_resolver=slurm",
            f"--slurm_port_base={base}",
            f"--data_dir={mnist_data_dir}",
            f"--model_dir={tmp_path / 'slurm'}",
        ),
        timeout=150,
        cwd=support.ROOT,
    )
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}\n{slurm_up.logs()}"
    assert done.returncode == 0, output
    for rank in (0, 1):  # srun --label: "RANK: line"
        starts = [line for line in done.stdout.splitlines() if line.startswith(f"{rank}: ")]
        assert any(
            f"tf_mgpu start: strategy=multi_worker_mirrored task=worker:{rank} replicas=2 " in line
            for line in starts
        ), output
    summary = json.loads((tmp_path / "slurm" / "summary.json").read_text())
    assert (summary["num_workers"], summary["replicas"]) == (2, 2), summary
    assert summary["test_accuracy"] > 0.7, summary

    # The same cluster started by hand with TF_CONFIG ends with the same weights.
    reference = support.run_cluster(
        support.cluster_spec(workers=2),
        lambda task: [
            *TRAIN_ARGS,
            f"--data_dir={mnist_data_dir}",
            f"--model_dir={tmp_path / 'tf_config'}",
        ],
        tmp_path / "logs",
        timeout=150,
    )
    for finished in reference.values():
        assert finished.returncode == 0, finished.tail()
    expected = json.loads((tmp_path / "tf_config" / "summary.json").read_text())
    assert summary["weights_sha256"] == expected["weights_sha256"], (summary, expected)


def test_a_batch_script_without_srun_is_told_to_use_srun(slurm_up, tmp_path):
    # A batch script runs outside any job step: SLURM_PROCID is set, SLURM_STEP_* are not.
    script = tmp_path / "job.sh"
    command = " ".join(support.main_command("--cluster_resolver=slurm"))
    script.write_text(f"#!/bin/sh\ncd {support.ROOT} && exec {command}\n")
    out = tmp_path / "job.out"
    done = slurm_up.run(["sbatch", "--wait", f"--output={out}", str(script)], timeout=60)
    assert done.returncode == errors.EXIT_USER_ERROR, (done, out.read_text())
    lines = out.read_text().splitlines()
    assert len(lines) == 1, lines
    assert "SLURM_STEP_NODELIST" in lines[0], lines
    assert "srun" in lines[0], lines


def test_main_outside_a_slurm_step_is_one_line(tmp_path):
    environment = {k: v for k, v in support.environment().items() if not k.startswith("SLURM")}
    commands = {"main": (support.main_command("--cluster_resolver=slurm"), environment)}
    finished = support.run_processes(commands, tmp_path, timeout=60)["main"]
    line = support.assert_one_line_exit(finished, errors.EXIT_USER_ERROR, "SLURM_PROCID")
    assert "srun" in line, line


def test_tf_config_outside_a_slurm_step_names_the_variables_and_srun():
    with pytest.raises(UserError) as raised:
        slurm_env.tf_config(port_base=8888, environ={"SLURM_PROCID": "0"})
    message = str(raised.value)
    assert "\n" not in message, message
    assert "SLURM_STEP_NODELIST" in message, message
    assert "SLURM_PROCID," not in message, "SLURM_PROCID is set"
    assert "srun -n2" in message, message


def step(monkeypatch, procid: int, node: str, localid: int, **more: str) -> None:
    """os.environ as srun sets it for task `procid` of a step on nodes n1 and n2, 2 tasks each."""
    variables = {
        "SLURM_PROCID": str(procid),
        "SLURM_STEP_NUM_TASKS": "4",
        "SLURM_STEP_NODELIST": "n[1-2]",
        "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
        "SLURMD_NODENAME": node,
        "SLURM_LOCALID": str(localid),
        "PATH": "/nonexistent",  # no nvidia-smi, whatever this machine has
        **more,
    }
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # restored after the test
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def test_two_cpu_nodes_make_four_workers_on_consecutive_ports(monkeypatch):
    base = free_port_base(2)
    step(monkeypatch, procid=3, node="n2", localid=1)
    variables = slurm_env.resolve(base)
    ports = (base, base + 1)
    assert json.loads(variables["TF_CONFIG"]) == {
        "cluster": {"worker": [f"n{n}:{p}" for n in (1, 2) for p in ports]},
        "task": {"type": "worker", "index": 3},
    }
    assert "CUDA_VISIBLE_DEVICES" not in variables, "a CPU node gets no GPU"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ, variables


def test_gpus_slurm_gave_the_node_are_split_among_its_tasks(monkeypatch):
    step(monkeypatch, procid=1, node="n1", localid=1, CUDA_VISIBLE_DEVICES="2,3,6,7")
    variables = slurm_env.resolve(free_port_base(2))
    assert variables["CUDA_VISIBLE_DEVICES"] == "6,7", variables


def test_fewer_gpus_than_tasks_are_left_as_slurm_bound_them(monkeypatch):
    step(monkeypatch, procid=1, node="n1", localid=1, CUDA_VISIBLE_DEVICES="5")
    variables = slurm_env.resolve(free_port_base(2))
    assert "CUDA_VISIBLE_DEVICES" not in variables, variables
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"


@pytest.mark.parametrize(
    ("value", "gpus"),
    [("", []), ("-1", []), ("NoDevFiles", []), ("0,1", ["0", "1"]), ("3,-1,4", ["3"])],
    ids=["empty", "minus_one", "slurm_none", "two", "stops_at_invalid"],
)
def test_visible_gpus_reads_cuda_visible_devices_as_cuda_does(value, gpus):
    assert slurm_env.visible_gpus({"CUDA_VISIBLE_DEVICES": value}) == gpus


def test_visible_gpus_without_nvidia_smi_is_none():
    assert slurm_env.visible_gpus({"PATH": "/nonexistent"}) == []


def test_cyclic_distribution_is_refused_in_one_line(monkeypatch):
    # srun --distribution=cyclic puts task 1 on n2, where the resolver's n1 address is wrong.
    step(monkeypatch, procid=1, node="n2", localid=0)
    with pytest.raises(UserError, match="--distribution=block") as raised:
        slurm_env.resolve(free_port_base(2))
    assert "\n" not in str(raised.value)


def test_a_taken_port_is_named_with_the_flag_to_change(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        step(monkeypatch, procid=0, node="n1", localid=0)
        with pytest.raises(UserError, match=f"port {port} on n1 is taken") as raised:
            slurm_env.resolve(port)
    assert "--slurm_port_base" in str(raised.value)
