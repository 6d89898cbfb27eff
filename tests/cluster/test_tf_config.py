"""TF_CONFIG parsing."""

import json

import pytest

from tf_mgpu.cluster import tf_config
from tf_mgpu.errors import UserError

TWO_WORKERS = {"worker": ["localhost:2001", "localhost:2002"]}


def environ(cluster_spec: dict, task_type: str, index: int) -> dict:
    return {
        "TF_CONFIG": json.dumps(
            {"cluster": cluster_spec, "task": {"type": task_type, "index": index}}
        )
    }


def test_no_tf_config_is_a_cluster_of_one_chief():
    task = tf_config.node_from_env({})
    assert (task.num_workers, task.is_chief, str(task)) == (1, True, "worker:0")


def test_worker_zero_is_chief_without_a_chief_task():
    first = tf_config.node_from_env(environ(TWO_WORKERS, "worker", 0))
    second = tf_config.node_from_env(environ(TWO_WORKERS, "worker", 1))
    assert (first.num_workers, first.is_chief, second.is_chief) == (2, True, False)


def test_chief_task_is_the_only_chief():
    spec = {"chief": ["localhost:2000"], **TWO_WORKERS}
    chief = tf_config.node_from_env(environ(spec, "chief", 0))
    worker0 = tf_config.node_from_env(environ(spec, "worker", 0))
    assert (chief.num_workers, chief.is_chief, worker0.is_chief) == (3, True, False)
    assert chief.addresses[0] == "localhost:2000", "the chief's address comes first"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"task": {"type": "worker", "index": 0}}), "no 'cluster'"),
        (json.dumps({"cluster": {"ps": ["h:1"], **TWO_WORKERS}}), "'ps'"),
        (json.dumps({"cluster": {"worker": ["nohost"]}}), "'nohost', which is not 'host:port'"),
        (
            json.dumps({"cluster": {"worker": ["h:99999"]}}),
            "'h:99999': port 99999 is out of range (1-65535)",
        ),
        (json.dumps({"cluster": {"worker": ["h:0"]}}), "'h:0': port 0 is out of range (1-65535)"),
        (json.dumps({"cluster": {"worker": ["h:1", "h:1"]}}), "twice"),
        (json.dumps({"cluster": {"chief": ["a:1", "b:1"]}}), "2 chiefs"),
        (json.dumps({"cluster": TWO_WORKERS}), "no 'task'"),
        (json.dumps({"cluster": TWO_WORKERS, "task": {"type": "chief", "index": 0}}), "'chief'"),
        (json.dumps({"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 2}}), "index 2"),
        (json.dumps({"cluster": TWO_WORKERS, "task": {"type": "worker", "index": True}}), "True"),
    ],
    ids=[
        "json",
        "no_cluster",
        "ps",
        "address",
        "port_range",
        "port_zero",
        "duplicate",
        "two_chiefs",
        "no_task",
        "type",
        "index_range",
        "index_type",
    ],
)
def test_bad_tf_config_is_one_user_error_with_an_example(raw, expected):
    with pytest.raises(UserError) as error:
        tf_config.node_from_env({"TF_CONFIG": raw})
    message = str(error.value)
    assert expected in message, message
    assert "expected e.g." in message, message
    assert "\n" not in message, message


def test_index_error_names_both_numbers():
    with pytest.raises(UserError, match=r"index 5 is out of range: the cluster has 2 'worker'"):
        tf_config.node_from_env(environ(TWO_WORKERS, "worker", 5))
