"""`tests/cpu_usage.py`: a test's CPU time is told apart as its own and its processes'."""

import os
import subprocess
import sys

from tests import cpu_usage
from tests.support import ROOT

BUSY = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"
TESTS = f"""
import subprocess, sys

BUSY = {BUSY!r}

def test_in_process():
    exec(BUSY)

def test_in_a_process():
    subprocess.run([sys.executable, "-c", BUSY], check=True)
"""
PYTEST = [sys.executable, "-m", "pytest", "-p", "tests.cpu_usage", "-p", "no:cacheprovider"]
PYTEST += ["-o", "addopts="]  # one process, none of the suite's own options


def test_each_test_is_measured_in_process_and_in_its_processes(tmp_path):
    (tmp_path / "test_busy.py").write_text(TESTS)
    log = tmp_path / "log"
    done = subprocess.run(
        [*PYTEST, "--rootdir", str(tmp_path), str(tmp_path / "test_busy.py")],
        cwd=ROOT,
        env={**os.environ, cpu_usage.LOG: str(log), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = {r["test"].split("::")[-1]: cpu_usage.totals(r) for r in cpu_usage.read(log)}
    assert records.keys() == {"test_in_process", "test_in_a_process"}
    own, started = records["test_in_process"], records["test_in_a_process"]
    assert own["self"] >= 0.45, own
    assert own["processes"] < 0.05, own
    assert started["processes"] >= 0.45, started
    assert started["self"] < 0.3, started
    assert min(own["wall"], started["wall"]) >= 0.45  # CPU time of one thread is no more
    table = cpu_usage.report(cpu_usage.read(log), top=5)
    assert "2 tests" in table, table
    assert "test_busy.py::test_in_a_process" in table, table
