"""`python -m tf_mgpu.launch` as users run it: real tf_mgpu.main workers training a user's
task (examples/two_inputs_task.py), killed and signalled.

Each launcher runs in its own session with a time bound; its workers die
with it (PR_SET_PDEATHSIG), so killing the launcher in `finally` ends them
all. tests/cluster/test_launcher.py covers the launcher's logic with stand-ins.
"""

import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

from tests import support
from tf_mgpu import errors
from tf_mgpu.cluster import netns

STEPS_PER_LOOP = 8
RUN_BOUND = 240  # seconds for one launcher run, restarts included


def launch_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf_mgpu.launch", *args]


def quick(*args: str) -> subprocess.CompletedProcess:
    """The launcher where it fails before any worker imports TensorFlow."""
    return subprocess.run(
        launch_command(*args),
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )


class Launched:
    """`python -m tf_mgpu.launch` in its own session, its output in `log_dir`."""

    def __init__(self, args: list[str], log_dir: pathlib.Path):
        log_dir.mkdir(parents=True, exist_ok=True)
        self._out, self._err = log_dir / "launch.out", log_dir / "launch.err"
        with open(self._out, "w") as out, open(self._err, "w") as err:
            self.process = subprocess.Popen(
                launch_command(*args),
                cwd=support.ROOT,
                env=support.environment(),
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.started = time.monotonic()

    def starts(self) -> list[dict[str, int]]:
        """Task name -> process id of every worker, per start, from the launcher's lines."""
        lines = [line for line in self._err.read_text().splitlines() if " started " in line]
        pattern = re.compile(r"(worker:\d+) \(pid (\d+)")
        return [{task: int(pid) for task, pid in pattern.findall(line)} for line in lines]

    def wait(self, timeout: float) -> support.Finished:
        """Waits for the exit; kills the launcher if `timeout` passes, and every worker's
        session: they die with the launcher anyway, this is in case that ever fails."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            workers = [pid for start in self.starts() for pid in start.values()]
            for pid in [self.process.pid, *workers]:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            self.process.wait()
        return support.Finished(
            "launch",
            self.process.returncode,
            self._out.read_text(),
            self._err.read_text(),
            time.monotonic() - self.started,
        )


def main_args(model_dir: pathlib.Path, *extra: str) -> list[str]:
    """A user's own task, examples/two_inputs_task.py (dropout, synchronized
    BatchNormalization, L2), on 2 workers: 2 epochs of 64 steps of 16 examples per
    worker, a checkpoint every call of 8 steps."""
    return [
        "--strategy=multi_worker_mirrored",
        f"--task={support.ROOT / 'examples' / 'two_inputs_task.py'}",
        f"--model_dir={model_dir}",
        "--epochs=2",
        "--batch_size=16",
        "--seed=3",
        f"--steps_per_loop={STEPS_PER_LOOP}",
        f"--checkpoint_steps={STEPS_PER_LOOP}",
        "--startup_timeout=120",
        *extra,
    ]


def summary(model_dir: pathlib.Path) -> dict:
    return json.loads((model_dir / "summary.json").read_text())


def mid_training(model_dir: pathlib.Path) -> bool:
    """A checkpoint exists and the chief has not finished."""
    return bool(support.checkpoint_steps(model_dir)) and not (model_dir / "summary.json").exists()


def private_network_allowed() -> bool:
    """Whether the kernel gives a new process a private network namespace."""
    code = "from tf_mgpu.cluster import netns; print(netns.enter().private)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=support.ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "True"


def launcher_lines(finished: support.Finished) -> list[str]:
    return [line for line in finished.stderr.splitlines() if line.startswith("tf_mgpu launch: ")]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """workers -> (the launcher's output, model dir) of a run never interrupted, run once."""
    runs = {}

    def run(workers: int) -> tuple[support.Finished, pathlib.Path]:
        if workers not in runs:
            tmp = tmp_path_factory.mktemp(f"uninterrupted{workers}")
            args = [f"--workers={workers}", "--", *main_args(tmp / "model")]
            runs[workers] = (Launched(args, tmp / "logs").wait(RUN_BOUND), tmp / "model")
        return runs[workers]

    return run


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ([], "--workers=N is required"),
        (["--workers=0"], "--workers=0: 0 is not a positive integer"),
        (["--workers=2", "--max_restarts=-1"], "--max_restarts=-1"),
        (["--workers=2", "--grace_seconds=nan"], "--grace_seconds must be a finite number"),
        (["--workers=2", "--epochs=1"], "'epochs'; tf_mgpu.main's flags go after --"),
        (["--workers=2", "stray"], "unexpected arguments: stray; tf_mgpu.main's flags go after"),
    ],
    ids=["workers_missing", "workers_zero", "max_restarts", "grace", "main_flag", "stray"],
)
def test_bad_launcher_flags_are_one_line_and_exit_2(args, named):
    done = quick(*args)
    assert done.returncode == errors.EXIT_USAGE, done.stderr
    assert done.stderr.startswith("tf_mgpu: error: "), done.stderr
    assert named in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_helpfull_explains_the_flags_and_the_separator():
    done = quick("--helpfull")
    for name in ("--workers", "--max_restarts", "--grace_seconds", "--[no]private_network"):
        assert name in done.stdout, name
    assert "Everything after `--` goes to every worker" in done.stdout, done.stdout


def test_a_bad_main_flag_fails_every_worker_once_with_its_code(tmp_path):
    done = quick("--workers=2", "--max_restarts=2", "--", "--epochs=0", f"--model_dir={tmp_path}")
    assert done.returncode == errors.EXIT_USAGE, done.stderr
    for rank in range(2):
        assert f"[worker:{rank}] tf_mgpu: error: flag --epochs=0" in done.stderr, done.stderr
    assert "a bad command line fails the same way again" in done.stderr, done.stderr
    assert "restart 1/" not in done.stderr, done.stderr


@pytest.mark.cluster
def test_two_workers_train_one_model_with_their_output_prefixed(uninterrupted):
    done, model_dir = uninterrupted(2)
    assert done.returncode == 0, done.tail()
    for rank in range(2):
        assert re.search(
            rf"^\[worker:{rank}\] tf_mgpu start: .* task=worker:{rank} ", done.stdout, re.M
        ), done.tail()
    assert "[worker:0] epoch 2/2" in done.stdout, done.tail()
    assert "(identical on all 2 workers)" in done.stdout, done.tail()
    assert summary(model_dir)["replicas"] == 2
    assert [json.loads(line)["epoch"] for line in (model_dir / "metrics.jsonl").open()] == [1, 2]
    ports, started = launcher_lines(done)  # nothing else went wrong
    # By default, in a private network namespace where the kernel allows one: then real
    # workers trained over its loopback. tests/cluster/test_netns.py checks that the line
    # tells the truth.
    private = ports == f"tf_mgpu launch: {netns.Network(private=True).line()}"
    assert private == private_network_allowed(), done.tail()
    assert " started worker:0 " in started, done.tail()


@pytest.mark.cluster
# The chief (it writes the checkpoints), and a non-chief worker of three: one case covers
# 3 workers and another victim, the cheapest form of both.
@pytest.mark.parametrize(("workers", "victim"), [(2, "worker:0"), (3, "worker:2")])
def test_a_killed_worker_restarts_the_group_and_ends_with_the_same_weights(
    tmp_path, uninterrupted, workers, victim
):
    # With dropout on: the random state is in the checkpoint, so the resumed run
    # draws the masks the uninterrupted one drew.
    reference, reference_dir = uninterrupted(workers)
    assert reference.returncode == 0, reference.tail()
    model_dir = tmp_path / "model"
    args = [f"--workers={workers}", "--max_restarts=1", "--", *main_args(model_dir)]
    running = Launched(args, tmp_path / "logs")
    try:
        support.wait_until(lambda: mid_training(model_dir), 180, "a checkpoint mid-training")
        os.killpg(running.starts()[-1][victim], signal.SIGKILL)  # its trainer, too
        done = running.wait(RUN_BOUND)
    finally:
        running.wait(0)
    assert done.returncode == 0, done.tail()
    restart = f"tf_mgpu launch: restart 1/1 after {victim} exit 137 (killed by SIGKILL)"
    assert any(line.startswith(restart) for line in launcher_lines(done)), done.tail()
    assert "[worker:0] tf_mgpu resume: from" in done.stdout, done.tail()
    resumed, uninterrupted_run = summary(model_dir), summary(reference_dir)
    assert resumed["weights_sha256"] == uninterrupted_run["weights_sha256"]
    assert resumed["test_loss"] == uninterrupted_run["test_loss"]
    assert resumed["replicas"] == workers


@pytest.mark.cluster
def test_sigterm_to_the_launcher_saves_on_every_worker_and_exits_75(tmp_path):
    """Resuming from the saved checkpoint is main's, tested in tests/cluster/test_supervisor.py."""
    model_dir = tmp_path / "model"
    args = ["--workers=2", "--max_restarts=1", "--", *main_args(model_dir)]
    running = Launched(args, tmp_path / "logs")
    try:
        support.wait_until(lambda: mid_training(model_dir), 180, "a checkpoint mid-training")
        running.process.send_signal(signal.SIGTERM)
        stopped = running.wait(60)
    finally:
        running.wait(0)
    assert stopped.returncode == errors.EXIT_STOPPED, stopped.tail()
    saved = support.checkpoint_steps(model_dir)[-1]
    # Each worker gets the launcher's SIGTERM, but the stop is agreed at a call boundary: a
    # worker whose signal lands after its peer's was agreed says so ("a signal to another
    # worker"). Either way every worker saves the same step.
    why = r"(SIGTERM|a signal to another worker)"
    for rank in range(2):
        assert re.search(
            rf"^\[worker:{rank}\] tf_mgpu: stopped: {why}: saved {re.escape(str(model_dir))}"
            rf"/checkpoints/ckpt-{saved};",
            stopped.stderr,
            re.M,
        ), stopped.tail()
    assert launcher_lines(stopped)[-1].startswith("tf_mgpu launch: SIGTERM: the workers stopped")
    assert "restart 1/" not in stopped.stderr, stopped.tail()
