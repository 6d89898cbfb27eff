"""The launcher's logic, with stand-in workers: a few lines of Python each, no TensorFlow.

The stand-in reads its rank from TF_CONFIG, records how it was started, and
fails, lingers or answers SIGTERM as its flags say, so every path of the
launcher (grace, SIGTERM, SIGKILL, restarts, signals, lost ports) runs in
about a second. Every stand-in ends on its own within `BOUND` seconds, and
dies with the launcher; tests/test_launch.py runs the real tf_mgpu.main.
"""

import contextlib
import io
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.cluster import launcher

BOUND = 20  # seconds a stand-in waits at most for a signal

STAND_IN = f"""
import json, os, pathlib, signal, sys, time

tf_config = json.loads(os.environ["TF_CONFIG"])
rank, workers = tf_config["task"]["index"], len(tf_config["cluster"]["worker"])
args = dict(arg[2:].split("=", 1) for arg in sys.argv[1:] if "=" in arg)
if args.get("on_sigterm") == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(75))
runs = pathlib.Path(args["runs"])
start = len(list(runs.glob(f"{{rank}}.*.json")))
record = {{"argv": sys.argv[1:], "pid": os.getpid(), "env": dict(os.environ)}}
(runs / f"{{rank}}.{{start}}.tmp").write_text(json.dumps(record))
(runs / f"{{rank}}.{{start}}.tmp").rename(runs / f"{{rank}}.{{start}}.json")
print(f"out {{rank}}")
print(f"err {{rank}}", file=sys.stderr)
fail_rank, _, code = args.get("fail", "-1:0").partition(":")
failing = "fail" in args and start < int(args.get("fail_starts", 1000))
if failing and rank == int(fail_rank):
    print(args.get("stderr", "failing"), file=sys.stderr)
    if int(code) > 128:
        os.kill(os.getpid(), int(code) - 128)
    sys.exit(int(code))
if rank == 0 and "signal_launcher" in args:
    while len(list(runs.glob(f"*.{{start}}.json"))) < workers:  # all can take SIGTERM now
        time.sleep(0.01)
    for _ in range(int(args["signal_launcher"])):
        os.kill(os.getppid(), signal.SIGINT)
        time.sleep(0.3)


def gone(pid):
    try:
        return pathlib.Path(f"/proc/{{pid}}/stat").read_text().rpartition(")")[2][1] in "ZX"
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it is read
        return True


if failing:  # the others outlive the failing worker, as real peers do
    failed = runs / f"{{fail_rank}}.{{start}}.json"
    while not failed.exists():
        time.sleep(0.01)
    while not gone(json.loads(failed.read_text())["pid"]):
        time.sleep(0.01)
if failing or "signal_launcher" in args or "forever" in args:
    time.sleep(float(args.get("linger", {BOUND})))
    sys.exit(int(args.get("others", 0)))
"""


def launch(tmp_path: pathlib.Path, *args: str, workers: int = 2, **options) -> tuple[int, str, str]:
    """Runs the launcher here over stand-ins; returns its exit code, stdout and stderr."""
    runs = tmp_path / "runs"
    runs.mkdir(exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    code = launcher.Launcher(
        [f"--runs={runs}", *args],
        workers=workers,
        program=(sys.executable, "-c", STAND_IN),
        out=out,
        err=err,
        **options,
    ).run()
    return code, out.getvalue(), err.getvalue()


def starts(tmp_path: pathlib.Path, rank: int) -> list[dict]:
    """How worker `rank` was started, once per start."""
    found = sorted((tmp_path / "runs").glob(f"{rank}.*.json"), key=lambda p: int(p.suffixes[0][1:]))
    return [json.loads(p.read_text()) for p in found]


def launcher_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("tf_mgpu launch: ")]


def test_split_argv_at_the_first_separator():
    assert launcher.split_argv(["p", "--workers=2", "--", "--epochs=1", "--", "x"]) == (
        ["p", "--workers=2"],
        ["--epochs=1", "--", "x"],
    )
    assert launcher.split_argv(["p", "--workers=2"]) == (["p", "--workers=2"], [])


def test_each_rank_has_its_own_task_in_one_cluster():
    spec = {"worker": ["localhost:1001", "localhost:1002", "localhost:1003"]}
    for rank in range(3):
        env = launcher.worker_environment(spec, rank, base={"TF_CONFIG": "old", "HOME": "/h"})
        assert json.loads(env["TF_CONFIG"]) == {
            "cluster": spec,
            "task": {"type": "worker", "index": rank},
        }
        assert env["HOME"] == "/h"
        assert env["PYTHONUNBUFFERED"] == "1", "lines would arrive when a pipe buffer fills"
        assert "TF_MGPU_PRIVATE_NETWORK" not in env
    told = launcher.worker_environment(
        spec, 0, base={"TF_MGPU_PRIVATE_NETWORK": "1"}, private_network=False
    )
    assert "TF_MGPU_PRIVATE_NETWORK" not in told, "a worker with a network is told it has none"
    told = launcher.worker_environment(spec, 0, base={}, private_network=True)
    assert told["TF_MGPU_PRIVATE_NETWORK"] == "1"


def test_a_restart_never_cleans():
    assert launcher.worker_command(["--clean"], restart=False, program=("m",)) == ["m", "--clean"]
    assert launcher.worker_command(["--clean"], restart=True, program=("m",)) == [
        "m",
        "--clean",
        "--noclean",
    ]


@pytest.mark.parametrize(
    ("returncode", "code", "described"),
    [
        (0, 0, "exit 0 (success)"),
        (6, 6, "exit 6 (lost a peer)"),
        (75, 75, "exit 75 (stopped after saving)"),
        (-9, 137, "exit 137 (killed by SIGKILL)"),
        (-15, 143, "exit 143 (killed by SIGTERM)"),
        (137, 137, "exit 137 (killed by SIGKILL)"),
        (42, 42, "exit 42"),
    ],
)
def test_exit_codes_as_a_shell_reports_them(returncode, code, described):
    assert launcher.exit_code(returncode) == code
    assert launcher.describe(code) == described


def test_the_first_failure_in_time_is_the_cause():
    exits = [
        launcher.Exit(0, 6, at=12.0),
        launcher.Exit(1, 137, at=2.0),
        launcher.Exit(2, 0, at=1.0),
    ]
    assert launcher.first_failure(exits) == exits[1]
    seen_together = [launcher.Exit(0, 6, at=3.0), launcher.Exit(1, 137, at=3.0)]
    assert launcher.first_failure(seen_together) == seen_together[1], "a lost peer is no cause"
    assert launcher.first_failure([launcher.Exit(0, 0, 1.0)]) is None


def test_lines_are_prefixed_whole_and_partial_last_lines_ended():
    stream = io.BytesIO(b"one\r\ntwo\n\xff bad byte\nno newline")
    sink = io.StringIO()
    tail = launcher.collections.deque(maxlen=2)
    launcher.forward_lines(stream, sink, launcher.prefix(3), threading.Lock(), tail)
    assert sink.getvalue().splitlines() == [
        "[worker:3] one",
        "[worker:3] two",
        "[worker:3] \ufffd bad byte",
        "[worker:3] no newline",
    ]
    assert list(tail) == ["\ufffd bad byte", "no newline"]


def test_every_worker_runs_with_its_own_tf_config_and_prefixed_output(tmp_path):
    code, out, err = launch(tmp_path, "--epochs=1", workers=3)
    assert code == 0, err
    for rank in range(3):
        assert f"[worker:{rank}] out {rank}" in out.splitlines(), out
        assert f"[worker:{rank}] err {rank}" in err.splitlines(), err
    configs = [json.loads(starts(tmp_path, rank)[0]["env"]["TF_CONFIG"]) for rank in range(3)]
    assert [c["task"] for c in configs] == [{"type": "worker", "index": i} for i in range(3)]
    addresses = configs[0]["cluster"]["worker"]
    assert all(c["cluster"] == {"worker": addresses} for c in configs), configs
    assert len(set(addresses)) == 3, addresses
    assert starts(tmp_path, 1)[0]["argv"] == [f"--runs={tmp_path / 'runs'}", "--epochs=1"]
    ports, started = launcher_lines(err)
    assert ports == (
        "tf_mgpu launch: workers' ports: reachable from other hosts (--noprivate_network); "
        "see docs/multi-worker.md"
    ), "tests/cluster/test_netns.py runs the launcher in a namespace, in a process of its own"
    for rank, address in enumerate(addresses):
        assert f"worker:{rank} (pid {starts(tmp_path, rank)[0]['pid']}, {address})" in started


def test_a_failure_gives_the_others_grace_to_exit_on_their_own(tmp_path):
    code, _, err = launch(tmp_path, "--fail=1:7", "--others=6", "--linger=0.3", grace=10)
    assert code == 7, err
    assert "SIGTERM" not in err, err
    assert launcher_lines(err)[2:] == [
        "tf_mgpu launch: worker:1 exit 7; the others have 10 s to stop on their own",
        "tf_mgpu launch: worker:1 exit 7; not restarted: no restarts left (--max_restarts=0)",
    ]


@pytest.mark.parametrize(
    ("on_sigterm", "ended_by"),
    [("exit", "SIGTERM to worker:0, worker:2"), ("ignore", "SIGKILL to worker:0, worker:2")],
)
def test_workers_still_running_after_the_grace_are_stopped(tmp_path, on_sigterm, ended_by):
    began = time.monotonic()
    code, _, err = launch(
        tmp_path, "--fail=1:7", f"--on_sigterm={on_sigterm}", workers=3, grace=0.3
    )
    assert code == 7, err
    assert time.monotonic() - began < 10, err
    assert ended_by in err, err


def test_a_failure_restarts_the_whole_group_on_new_ports_without_clean(tmp_path):
    code, out, err = launch(
        tmp_path, "--fail=1:137", "--fail_starts=1", "--others=6", "--linger=0.2", max_restarts=1
    )
    assert code == 0, err
    assert (
        "tf_mgpu launch: restart 1/1 after worker:1 exit 137 (killed by SIGKILL): starting 2 "
        "workers on new ports, to resume from the last checkpoint"
    ) in err.splitlines(), err
    for rank in range(2):
        first, second = starts(tmp_path, rank)
        assert first["argv"][-1] != "--noclean", first["argv"]
        assert second["argv"][-1] == "--noclean", second["argv"]
        assert first["env"]["TF_CONFIG"] != second["env"]["TF_CONFIG"], "the same ports again"
    assert out.count("[worker:0] out 0") == 2, out


def test_restarts_run_out_and_the_first_failure_is_the_exit_code(tmp_path):
    code, _, err = launch(tmp_path, "--fail=0:6", "--others=6", "--linger=0.1", max_restarts=2)
    assert code == errors.EXIT_PEER_LOST, err
    assert len(starts(tmp_path, 1)) == 3
    assert launcher_lines(err)[-1] == (
        "tf_mgpu launch: worker:0 exit 6 (lost a peer); not restarted: no restarts left "
        "(--max_restarts=2)"
    )


# Written out, not read from launcher.NOT_RESTARTED: the test must fail if a code leaves
# that table (README: "it does not restart after exit 2, 3 or 4 ... or 75").
@pytest.mark.parametrize(
    ("code", "why"),
    [
        (2, "a bad command line fails the same way again"),
        (3, "bad input fails the same way again"),
        (4, "the same checkpoint at the same learning rate diverges again"),
        (75, "a worker was stopped by a signal, which is a request, not a failure"),
    ],
)
def test_failures_that_would_recur_are_not_restarted(tmp_path, code, why):
    found, _, err = launch(tmp_path, f"--fail=1:{code}", "--linger=0.1", max_restarts=2)
    assert found == code, err
    assert len(starts(tmp_path, 0)) == 1, err
    assert why in launcher_lines(err)[-1], err


def test_min_max_restarts_without_the_failed_worker_at_the_same_global_batch(tmp_path):
    code, _, err = launch(
        tmp_path,
        "--fail=1:137",
        "--fail_starts=1",
        "--others=6",
        "--linger=0.2",
        workers=3,
        min_workers=2,
        max_restarts=2,
    )
    assert code == 0, err
    assert launcher_lines(err)[-2] == (
        "tf_mgpu launch: restart 1/2 after worker:1 exit 137 (killed by SIGKILL), taken as "
        "lost (--workers=2:3): starting 2 workers on new ports, to resume from the last "
        "checkpoint"
    ), err
    assert [len(starts(tmp_path, rank)) for rank in range(3)] == [2, 2, 1]
    for rank in range(2):
        first, second = starts(tmp_path, rank)
        assert len(json.loads(first["env"]["TF_CONFIG"])["cluster"]["worker"]) == 3
        assert len(json.loads(second["env"]["TF_CONFIG"])["cluster"]["worker"]) == 2
        # First, so that main's own flags (a flagfile's too) may set another value.
        assert first["argv"][0] == second["argv"][0] == "--batch_workers=3", first["argv"]
        assert second["argv"][-1] == "--noclean", second["argv"]


def test_at_min_the_group_restarts_whole_until_restarts_run_out(tmp_path):
    code, _, err = launch(
        tmp_path,
        "--fail=0:137",
        "--others=6",
        "--linger=0.1",
        workers=3,
        min_workers=2,
        max_restarts=3,
    )
    assert code == 137, err
    assert [len(starts(tmp_path, rank)) for rank in range(3)] == [4, 4, 1]
    restarts = [line for line in launcher_lines(err) if " restart " in line]
    assert [line.split(": starting ")[0].split("SIGKILL)")[1] for line in restarts] == [
        ", taken as lost (--workers=2:3)",
        " (--workers=2:3: at the minimum, the group restarts whole)",
        " (--workers=2:3: at the minimum, the group restarts whole)",
    ], err
    assert launcher_lines(err)[-1].endswith("no restarts left (--max_restarts=3)"), err


def test_min_max_does_not_restart_what_would_recur(tmp_path):
    code, _, err = launch(
        tmp_path, "--fail=1:3", "--linger=0.1", workers=3, min_workers=1, max_restarts=2
    )
    assert code == errors.EXIT_USER_ERROR, err
    assert len(starts(tmp_path, 0)) == 1, err
    assert "bad input fails the same way again" in launcher_lines(err)[-1], err


def test_a_lost_port_is_no_lost_worker(tmp_path):
    code, _, err = launch(
        tmp_path,
        "--fail=1:1",
        "--fail_starts=1",
        "--stderr=RuntimeError: Could not start gRPC server",
        "--others=6",
        "--linger=0.1",
        workers=3,
        min_workers=1,
    )
    assert code == 0, err
    assert [len(starts(tmp_path, rank)) for rank in range(3)] == [2, 2, 2], err


def test_min_workers_is_between_one_and_workers():
    for minimum in (0, 4):
        with pytest.raises(ValueError, match=f"min_workers={minimum} is not in 1..3"):
            launcher.Launcher([], workers=3, min_workers=minimum)


def test_a_lost_port_starts_again_without_counting_a_restart(tmp_path):
    code, _, err = launch(
        tmp_path,
        "--fail=1:1",
        "--fail_starts=1",
        "--stderr=RuntimeError: Could not start gRPC server",
        "--others=6",
        "--linger=0.1",
    )
    assert code == 0, err
    assert "worker:1 exit 1 (a bug or a crash): another process took its port" in err, err
    assert len(starts(tmp_path, 0)) == 2, err


def test_a_signal_is_passed_on_once_and_never_restarted(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    code, _, err = launch(tmp_path, "--signal_launcher=1", max_restarts=2)
    assert code == errors.EXIT_STOPPED, err
    assert "tf_mgpu launch: SIGINT: SIGTERM to worker:0, worker:1" in err, err
    assert "SIGKILL" not in err, err
    assert re.fullmatch(
        r"tf_mgpu launch: SIGINT: the workers stopped \(worker:\d exit 75 \(stopped after "
        r"saving\)\); rerun the same command to resume",
        launcher_lines(err)[-1],
    ), err
    assert len(starts(tmp_path, 0)) == 1
    assert signal.getsignal(signal.SIGINT) is before, "the launcher left its handler behind"


def test_a_second_signal_kills_the_workers(tmp_path):
    code, _, err = launch(tmp_path, "--signal_launcher=2", "--on_sigterm=ignore")
    assert code == 128 + signal.SIGKILL, err
    assert "tf_mgpu launch: SIGINT again: SIGKILL to worker:0, worker:1" in err, err


def test_the_workers_die_with_a_killed_launcher(tmp_path):
    (tmp_path / "runs").mkdir()
    driver = (
        "import sys; from tf_mgpu.cluster import launcher; "
        f"launcher.Launcher(sys.argv[1:], workers=2, program=(sys.executable, '-c', {STAND_IN!r}))"
        ".run()"
    )
    log = tmp_path / "launcher.err"
    with open(log, "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", driver, f"--runs={tmp_path / 'runs'}", "--forever=1"],
            cwd=support.ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    pids: list[int] = []
    try:
        support.wait_until(lambda: "started" in log.read_text(), 30, "the workers to start")
        pids = [int(pid) for pid in re.findall(r"\(pid (\d+)", log.read_text())]
        assert len(pids) == 2, log.read_text()
        process.kill()
        process.wait(10)
        support.wait_until(lambda: not any(map(alive, pids)), 10, "the workers to die")
    finally:
        for pid in [process.pid, *pids]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        process.wait()


def alive(pid: int) -> bool:
    """Running, not a zombie: a reparented worker may wait unreaped in a container."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")
