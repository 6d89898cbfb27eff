"""Faults of a real multi-worker run on loopback: lost, frozen and missing peers, SIGTERM.

Every task is a real `python -m tf_mgpu.main` with its own TF_CONFIG (a
supervisor and its trainer, in their own session), training a user's task
(examples/two_inputs_task.py: dropout, synchronized BatchNormalization); the
faults are real signals. Each test bounds every wait and kills what is left.
"""

import json
import signal
import time

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.cluster import local

pytestmark = pytest.mark.cluster

STEPS_PER_EPOCH = 32  # the example's 2,048 training examples at a global batch of 64
# Seconds from a SIGKILL to the survivors' exit. Measured over 8 runs of the two tests below
# on 2 loaded cores (BUILD_NOTES, issue 25): 0.1-10.0 s (a dead worker is usually seen by the
# chief's heartbeat check after 8-10 s, a dead chief at once); 3x the slowest for margin.
PEER_BOUND = 30


def worker_args(tmp_path, workers: int, *extra: str):
    """Per task: a user's own task, examples/two_inputs_task.py (dropout, synchronized
    BatchNormalization, L2), 3 epochs at a global batch of 64, 4 steps per call, a
    checkpoint every 8.

    Every task gets the same --model_dir, as on a shared file system: each
    restores from the chief's checkpoints there; only the chief writes.
    """

    def args(task: str) -> list[str]:
        del task
        return [
            "--strategy=multi_worker_mirrored",
            f"--task={support.ROOT / 'examples' / 'two_inputs_task.py'}",
            f"--model_dir={tmp_path / 'model'}",
            "--epochs=3",
            f"--batch_size={64 // workers}",
            "--seed=11",
            "--steps_per_loop=4",
            "--checkpoint_steps=8",
            "--startup_timeout=120",
            *extra,
        ]

    return args


def chief_dir(tmp_path):
    return tmp_path / "model"


def mid_training(tmp_path) -> bool:
    steps = support.checkpoint_steps(chief_dir(tmp_path))
    return any(step % STEPS_PER_EPOCH for step in steps)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[dict, dict]:
    """The 2-worker run of `worker_args` never interrupted: (started, finished) by task."""
    tmp_path = tmp_path_factory.mktemp("uninterrupted")
    spec = support.cluster_spec(workers=2)
    started = support.start_cluster(spec, worker_args(tmp_path, 2), tmp_path / "logs")
    return started, support.wait_all(started, 300)


def assert_lost_peer(finished: support.Finished, lost: str) -> None:
    line = support.assert_one_line_exit(finished, errors.EXIT_PEER_LOST, "")
    assert lost in line, line
    assert "resume" in line, line


def test_two_workers_lose_one_then_resume_to_the_same_weights(tmp_path, uninterrupted):
    # The uninterrupted run, timed from its last line to its exit.
    reference, finished = uninterrupted
    for done in finished.values():
        assert done.returncode == 0, done.tail()
        assert "crashed" not in done.stderr, done.tail()
        assert done.seconds < 120, done.tail()
    for task in reference.values():  # no lingering in TensorFlow's shutdown after success
        assert support.lingered(task, chief=reference["worker:0"]) < 5, task.name
    expected = support.digests(finished["worker:0"])
    assert expected.get("workers") == "2", finished["worker:0"].tail()
    support.assert_quiet_worker(finished["worker:1"])

    # Kill worker:1 once the chief has saved mid-epoch.
    spec = support.cluster_spec(workers=2)
    args = worker_args(tmp_path / "run", 2)
    running = support.start_cluster(spec, args, tmp_path / "logs")
    try:
        support.wait_until(lambda: mid_training(tmp_path / "run"), 180, "a mid-epoch checkpoint")
        running["worker:1"].signal_group(signal.SIGKILL)
        killed_at = time.monotonic()
        survivor = running["worker:0"].wait(PEER_BOUND + 30)
        lost_after = time.monotonic() - killed_at
    finally:
        support.wait_all(running, 10)
    print(f"worker:0 exited {lost_after:.1f} s after worker:1's SIGKILL")  # pytest -s shows it
    assert lost_after < PEER_BOUND, survivor.tail()
    assert_lost_peer(survivor, "worker:1")
    assert support.group_gone(running["worker:0"]), "a trainer was left behind"

    # The same command on every worker resumes and ends with the uninterrupted weights.
    spec = support.cluster_spec(workers=2)
    resumed = support.wait_all(support.start_cluster(spec, args, tmp_path / "logs2"), 300)
    for done in resumed.values():
        assert done.returncode == 0, done.tail()
    assert support.digests(resumed["worker:0"]) == expected, resumed["worker:0"].tail()
    assert "tf_mgpu resume: from" in resumed["worker:0"].stdout, resumed["worker:0"].tail()
    metrics = (chief_dir(tmp_path / "run") / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in metrics] == [1, 2, 3]
    written = sorted(p.name for p in chief_dir(tmp_path / "run").iterdir())
    assert written == sorted(
        [
            "checkpoints",
            "flags.txt",
            "metrics.jsonl",
            "model.keras",
            "model.weights.h5",
            "saved_model",
            "summary.json",
            "tensorboard",
        ]
    ), written


def test_three_workers_lose_the_chief_and_the_others_end_in_time(tmp_path):
    spec = support.cluster_spec(workers=3)
    running = support.start_cluster(
        spec, worker_args(tmp_path, 4, "--epochs=50"), tmp_path / "logs"
    )
    try:
        support.wait_until(lambda: mid_training(tmp_path), 180, "a mid-epoch checkpoint")
        running["worker:0"].signal_group(signal.SIGKILL)
        killed_at = time.monotonic()
        survivors = {t: running[t].wait(PEER_BOUND + 30) for t in ("worker:1", "worker:2")}
    finally:
        support.wait_all(running, 10)
    for task, done in survivors.items():
        lost_after = done.seconds - (killed_at - running[task].started)
        print(f"{task} exited {lost_after:.1f} s after worker:0's SIGKILL")  # pytest -s shows it
        assert lost_after < PEER_BOUND, done.tail()
        assert_lost_peer(done, "worker:0")


def test_a_peer_that_never_starts_is_named_and_the_wait_ends_cleanly(tmp_path):
    spec = support.cluster_spec(workers=2)
    args = worker_args(tmp_path, 2, "--startup_timeout=5")
    alone = support.Started(
        args("worker:0"), tmp_path / "logs", tf_config=local.tf_config(spec, "worker", 0)
    )
    done = alone.wait(90)
    line = support.assert_one_line_exit(done, errors.EXIT_PEERS_UNREACHABLE, "waited 5 s")
    assert f"not answering: {spec['worker'][1]}" in line, line
    assert done.seconds < 5 + 30, done.tail()
    assert support.group_gone(alone), "a trainer was left behind"


def test_sigterm_while_waiting_for_peers_stops_at_once(tmp_path):
    spec = support.cluster_spec(workers=2)
    args = worker_args(tmp_path, 2)
    alone = support.Started(
        args("worker:0"), tmp_path / "logs", tf_config=local.tf_config(spec, "worker", 0)
    )
    time.sleep(8)  # imports done, waiting in the strategy's constructor
    alone.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    done = alone.wait(30)
    assert time.monotonic() - sent < 5, done.tail()
    support.assert_one_line_exit(done, errors.EXIT_STOPPED, "nothing to save")
    assert support.group_gone(alone), "a trainer was left behind"
