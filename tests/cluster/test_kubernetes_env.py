"""--cluster_resolver=kubernetes: TF_CONFIG from a pod's index in an Indexed Job.

The derivation is rendered here for every pod of a Job, as each pod would run
it; then two real workers train with the rendered configs, the pods' host
names replaced by loopback ports (this machine has no cluster DNS).
"""

import json
import pathlib
import re

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.cluster import kubernetes_env, tf_config
from tf_mgpu.errors import UserError

pytestmark = pytest.mark.cluster

MANIFEST = support.ROOT / "examples" / "kubernetes" / "indexed-job.yaml"


def pod(index: int, workers: int, **more: str) -> dict[str, str]:
    """The environment of pod `index` of Job `tf-mgpu` as examples/kubernetes sets it."""
    return {
        "JOB_COMPLETION_INDEX": str(index),  # Kubernetes
        "HOSTNAME": f"tf-mgpu-{index}",  # the Job controller: <job>-<index>
        "TF_MGPU_WORKERS": str(workers),  # the manifest
        "TF_MGPU_SERVICE": "tf-mgpu",
        **more,
    }


def render(workers: int, **more: str) -> list[dict]:
    return [kubernetes_env.spec(pod(i, workers, **more)) for i in range(workers)]


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_every_pod_gets_the_same_cluster_and_its_own_index(workers):
    specs = render(workers)
    expected = [f"tf-mgpu-{i}.tf-mgpu:2222" for i in range(workers)]
    for i, spec in enumerate(specs):
        assert spec == {"cluster": {"worker": expected}, "task": {"type": "worker", "index": i}}, (
            i,
            spec,
        )


def test_port_and_job_name_from_the_manifest_win():
    specs = render(2, TF_MGPU_PORT="3000", TF_MGPU_JOB="train", HOSTNAME="whatever")
    assert specs[1]["cluster"]["worker"] == ["train-0.tf-mgpu:3000", "train-1.tf-mgpu:3000"]


def test_the_tf_config_is_json_that_the_tf_config_reader_accepts():
    task = tf_config.node_from_env({"TF_CONFIG": kubernetes_env.tf_config(pod(1, 3))})
    assert (str(task), task.num_workers, task.is_chief) == ("worker:1", 3, False), task


@pytest.mark.parametrize(
    ("drop", "change", "expected"),
    [
        ("JOB_COMPLETION_INDEX", {}, "completionMode: Indexed"),
        ("TF_MGPU_WORKERS", {}, "TF_MGPU_WORKERS is not set"),
        ("TF_MGPU_SERVICE", {}, "headless Service"),
        (None, {"JOB_COMPLETION_INDEX": "2"}, "must be below the number of workers"),
        (None, {"TF_MGPU_WORKERS": "two"}, "'two' is not an integer >= 1"),
        (None, {"TF_MGPU_PORT": "70000"}, "is not a port"),
        (None, {"HOSTNAME": "my-pod"}, "set TF_MGPU_JOB"),
    ],
    ids=[
        "no_index",
        "no_workers",
        "no_service",
        "index_too_big",
        "bad_workers",
        "bad_port",
        "host",
    ],
)
def test_what_is_missing_is_one_line_naming_it(drop, change, expected):
    environ = {**pod(1, 2), **change}
    environ.pop(drop, None)
    with pytest.raises(UserError, match=re.escape(expected)) as raised:
        kubernetes_env.spec(environ)
    assert "\n" not in str(raised.value), raised.value


def test_the_example_manifest_sets_what_the_derivation_reads():
    """completions, parallelism and TF_MGPU_WORKERS agree; the subdomain is the Service."""
    text = MANIFEST.read_text()

    def values(key: str) -> set[str]:
        return set(re.findall(rf"^\s*{key}:\s*(\S+)", text, re.MULTILINE))

    env = dict(re.findall(r"- name: (TF_MGPU_\w+).*\n\s*value: \"?([\w-]+)\"?", text))
    assert values("completionMode") == {"Indexed"}, text
    assert values("completions") == values("parallelism") == {env["TF_MGPU_WORKERS"]}, env
    assert values("subdomain") == {env["TF_MGPU_SERVICE"]}, env
    assert "--cluster_resolver=kubernetes" in text


@pytest.mark.parametrize(
    ("name", "label"),
    [("indexed-job.yaml", "job-name"), ("tfjob.yaml", "training.kubeflow.org/job-name")],
)
def test_the_network_policy_admits_only_the_jobs_pods_to_the_worker_port(name, label):
    """TensorFlow's gRPC server runs what anyone who reaches it sends: the policy guards the
    job's pods (by the label the Job controller or the operator puts on them) and admits
    only them, on the port the workers listen on."""
    workload, _, policy = (MANIFEST.parent / name).read_text().partition("kind: NetworkPolicy")
    assert policy, f"{name} has no NetworkPolicy"
    job = re.search(r"^kind: (?:Job|TFJob)\nmetadata:\n  name: (\S+)", workload, re.M)[1]
    guarded_and_admitted = re.findall(r"matchLabels:\n\s+(\S+): (\S+)", policy)
    assert guarded_and_admitted == [(label, job)] * 2, policy
    assert re.findall(r"policyTypes:\n\s+- (\w+)", policy) == ["Ingress"], policy
    service = re.search(r"selector:\n\s+(\S+): (\S+)", workload)
    assert service is None or service.groups() == (label, job), "the Service selects others"
    ports = set(re.findall(r"containerPort: (\d+)", workload))
    assert len(ports) == 1, ports
    assert re.findall(r"^\s+port: (\d+)", policy, re.M) == list(ports), policy


def test_main_outside_an_indexed_job_is_one_line(tmp_path):
    environment = {
        k: v for k, v in support.environment().items() if not k.startswith(("JOB_", "TF_MGPU_"))
    }
    commands = {"main": (support.main_command("--cluster_resolver=kubernetes"), environment)}
    finished = support.run_processes(commands, tmp_path, timeout=60)["main"]
    support.assert_one_line_exit(finished, errors.EXIT_USER_ERROR, "JOB_COMPLETION_INDEX")


def loopback(spec: dict, ports: list[int]) -> dict:
    """`spec` with pod i's host name replaced by 127.0.0.1 on its own port."""
    hosts = [f"127.0.0.1:{port}" for port in ports]
    return {"cluster": {"worker": hosts}, "task": spec["task"]}


def test_two_pods_rendered_configs_train_one_model(tmp_path: pathlib.Path, mnist_data_dir):
    ports = support.free_ports(2)
    configs = [loopback(spec, ports) for spec in render(2)]
    args = [
        "--strategy=multi_worker_mirrored",
        "--epochs=1",
        "--batch_size=32",
        "--train_split=train[:1024]",
        "--test_split=test[:256]",
        "--steps_per_loop=16",
        "--startup_timeout=60",
        f"--data_dir={mnist_data_dir}",
        f"--model_dir={tmp_path / 'run'}",
    ]
    commands = {
        f"pod{i}": (support.main_command(*args), support.environment(config))
        for i, config in enumerate(configs)
    }
    finished = support.run_processes(commands, tmp_path / "logs", timeout=150)
    for name, done in finished.items():
        assert done.returncode == 0, (name, done.tail())
    chief = finished["pod0"].stdout
    assert "identical on all 2 workers" in chief, finished["pod0"].tail()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["num_workers"], summary["replicas"]) == (2, 2), summary
