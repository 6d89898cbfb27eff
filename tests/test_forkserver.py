"""A run forked by tests/forkserver.py is the run `python -m` starts, TensorFlow's import aside.

The probe (tests/forkserver_probe.py) prints what a run sees of its start, then exits as told.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from tests import forkserver

ROOT = pathlib.Path(__file__).resolve().parent.parent

PROBE = "tests.forkserver_probe"
OTHER_HASH_SEED = "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"  # not this process's


@pytest.fixture
def probe_forkable(monkeypatch):
    monkeypatch.setattr(forkserver, "_COMMANDS", (*forkserver._COMMANDS, PROBE))
    monkeypatch.delenv("TF_MGPU_TEST_FORK", raising=False)  # these tests are of the forks


def start(tmp_path, *args, name="probe", cwd=ROOT, fork=True):
    """The probe, forked or started by `subprocess.Popen` as a test would start it."""
    command = [sys.executable, "-m", PROBE, *args]
    env = {**environment(), "PROBE_SETTING": name}
    with open(tmp_path / f"{name}.out", "w") as out, open(tmp_path / f"{name}.err", "w") as err:
        if fork:
            return forkserver.popen(command, cwd, env, out, err, start_new_session=True)
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


def environment(**more) -> dict:
    """This process's environment, as tests.support gives a child."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "TF_XLA_FLAGS")}
    return {**env, **more}


def seen(tmp_path, name="probe") -> dict:
    return json.loads((tmp_path / f"{name}.out").read_text())


def test_a_forked_run_starts_as_python_m_does_but_for_the_import(tmp_path, probe_forkable):
    forked = start(tmp_path, "--exit=0", name="forked")
    executed = start(tmp_path, "--exit=0", name="executed", fork=False)
    assert isinstance(forked, forkserver.Forked)
    assert forked.wait(60) == 0
    assert executed.wait(60) == 0
    by_fork, by_exec = seen(tmp_path, "forked"), seen(tmp_path, "executed")
    assert by_fork.pop("tensorflow_loaded")
    assert not by_exec.pop("tensorflow_loaded")
    assert by_fork.pop("setting") == "forked"
    assert by_exec.pop("setting") == "executed"
    assert by_fork == by_exec, (by_fork, by_exec)
    assert by_fork["argv"][1:] == ["--exit=0"]
    assert by_fork["main"] == "__main__"
    assert by_fork["own_session"]
    assert by_fork["stdin_is_null"]
    assert by_fork["open_files"] == ["0", "1", "2", "3"], "3: the listing's own"
    elsewhere = start(tmp_path, "--exit=0", name="elsewhere", cwd=tmp_path)
    assert elsewhere.wait(60) == 0
    there = seen(tmp_path, "elsewhere")
    assert there["cwd"] == str(tmp_path) == there["path0"]


@pytest.mark.parametrize(
    "ignored", [(), (signal.SIGINT, signal.SIGQUIT), (signal.SIGTERM,)], ids=str
)
def test_a_forked_run_has_the_signals_an_exec_from_here_would_give(
    tmp_path, probe_forkable, ignored
):
    # (SIGINT, SIGQUIT): what a non-interactive shell gives a background job, as when the
    # suite runs as `bash .ci/run &`; the server was started before, with other dispositions.
    forkserver._started()
    before = {number: signal.getsignal(number) for number in ignored}
    try:
        for number in ignored:
            signal.signal(number, signal.SIG_IGN)
        forked = start(tmp_path, "--exit=0", name="forked")
        executed = start(tmp_path, "--exit=0", name="executed", fork=False)
        assert isinstance(forked, forkserver.Forked)
        assert forked.wait(60) == 0
        assert executed.wait(60) == 0
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
    by_fork, by_exec = seen(tmp_path, "forked"), seen(tmp_path, "executed")
    assert by_fork["signals"] == by_exec["signals"]
    for number in ignored:
        assert by_exec["signals"][number.name] == repr(signal.SIG_IGN), by_exec["signals"]


def test_exit_codes_signals_and_timeouts_answer_as_popen_does(tmp_path, probe_forkable):
    assert start(tmp_path, "--exit=3", name="three").wait(60) == 3
    raising = start(tmp_path, "--exit=raise", name="raises")
    assert raising.wait(60) == 1
    assert "Traceback" in (tmp_path / "raises.err").read_text()  # the user's traceback stays
    waiting = start(tmp_path, "--exit=never", name="waits")
    deadline = time.monotonic() + 60
    while not (tmp_path / "waits.out").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert waiting.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(0.2)
    os.killpg(waiting.pid, signal.SIGTERM)  # its own session, as start_new_session gives
    assert waiting.wait(60) == -signal.SIGTERM
    waiting.send_signal(signal.SIGKILL)  # an ended run: nothing, as Popen does
    with pytest.raises(RuntimeError, match="No such file"):  # Popen raises it too
        start(tmp_path, "--exit=0", name="nowhere", cwd=tmp_path / "missing")


def test_a_forked_runs_cpu_is_counted(tmp_path, probe_forkable):
    before = forkserver.cpu_seconds
    assert start(tmp_path, "--exit=busy").wait(60) == 0
    assert forkserver.cpu_seconds - before >= 0.5


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["tf_mgpu.launch", "--workers=2"], {}),  # starts processes of its own
        (["tf_mgpu.main", "--verbosity=0"], {}),  # TensorFlow's C++ logs, set before import
        (["tf_mgpu.main"], {"TF_CONFIG": "{}"}),  # a cluster: its supervisor execs anyway
        (["tf_mgpu.main"], {"TF_CPP_MIN_LOG_LEVEL": "0"}),  # read as TensorFlow loads
        (["tf_mgpu.main"], {"PYTHONHASHSEED": OTHER_HASH_SEED}),  # read when Python starts
    ],
)
def test_runs_that_must_start_fresh_are_not_forked(args, env, monkeypatch):
    monkeypatch.delenv("TF_MGPU_TEST_FORK", raising=False)
    base = {**environment(), **env}
    assert forkserver.forkable([sys.executable, "-m", "tf_mgpu.main"], environment())
    assert not forkserver.forkable([sys.executable, "-m", *args], base)
