"""The benchmark's command line: one real run end to end, and user errors."""

import json
import subprocess
import sys

import pytest

from tests.support import ROOT, environment, mnist_manual_dir
from tf_mgpu import errors


def bench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tf_mgpu.bench", f"--manual_dir={mnist_manual_dir()}", *args],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.harness
@pytest.mark.bench
def test_a_small_run_prints_a_self_documenting_table_and_writes_it(tmp_path, mnist_data_dir):
    done = bench(
        f"--data_dir={mnist_data_dir}",
        "--only=seed_torch,tf_mgpu,tf_mgpu_cold,startup,compute",
        "--epochs=2",
        "--rounds=1",
        "--train_split=train[:1024]",
        "--test_split=test[:500]",
        f"--out={tmp_path}",
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    for expected in ("tf_mgpu benchmark", "cpu: ", "tensorflow 2.", "torch 2.", "epochs=2"):
        assert expected in out, f"{expected!r} missing from:\n{out}"
    table = out.split("\nvariant ", 1)[1].split("\n\n", 1)[0]  # the main table
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert rows["seed_torch"][2] == "1.00x", out
    assert rows["tf_mgpu"][-1] == "1", out  # runs
    assert "steady ex/s, tf_mgpu / seed_torch" in out, out
    assert f"wrote {tmp_path / 'bench.json'}" in out, out
    report = json.loads((tmp_path / "bench.json").read_text())
    measured = {m["variant"]: m for m in report["measurements"]}
    assert sorted(measured) == ["seed_torch", "tf_mgpu", "tf_mgpu_cold"], measured
    assert all(len(m["epoch_seconds"]) == 2 for m in measured.values()), measured
    assert (tmp_path / "runs" / "round1" / "tf_mgpu" / "model" / "summary.json").is_file()
    assert (tmp_path / "table.csv").read_text().startswith("variant,description,runs,")
    # The first run made its own caches beside links to the prepared data; the warm-up
    # filled the shared ones first.
    cold = tmp_path / "runs" / "round1" / "tf_mgpu_cold" / "tfds"
    assert (cold / "mnist").is_symlink(), list(cold.iterdir())
    assert (cold / "tf_mgpu_cache").is_dir(), list(cold.iterdir())
    assert "warm-up (untimed, one epoch each; s): tf_mgpu " in out, out
    assert "end-to-end wall, first run, tf_mgpu_cold / seed_torch" in out, out
    assert {row["probe"] for row in report["startup"]} == {
        "help",
        "flag_value",
        "unknown_flag",
        "tf_config",
        "task_file",
        "model_dir",
        "manual_dir",
    }, report["startup"]
    assert report["compute"]["train_flops_per_example"] > 4e5, report["compute"]
    assert "GFLOP/s  of peak" in out, out


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--only=tf_mgpu,nope"], "unknown nope"),
        (["--mwms_batches=128,x"], "--mwms_batches=128,x: not integers"),
        (["--mwms_batches=129"], "129 is not an even global batch"),
        (
            ["--variant=horovod"],
            "<seed_torch|keras_fit|xla_floor|keras_fit_task|keras_fit_task_bf16|task_floor|compute>",
        ),
        (["--rounds=0"], "rounds"),
    ],
    ids=["only", "batches_not_int", "batches_odd", "variant", "rounds"],
)
def test_bad_flags_fail_in_one_line_naming_the_flag(args, named):
    done = bench(*args)
    assert done.returncode == errors.EXIT_USAGE, done.stderr
    assert_one_line(done, named)


def bench_alone(*args: str) -> subprocess.CompletedProcess:
    """The benchmark as troubleshooting.md gives it: no --manual_dir."""
    return subprocess.run(
        [sys.executable, "-m", "tf_mgpu.bench", *args],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_one_line(done: subprocess.CompletedProcess, named: str) -> None:
    assert done.stderr.startswith("tf_mgpu: error: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert named in done.stderr, done.stderr
    assert done.stdout == "", "help or output printed on a user error"


@pytest.mark.parametrize(
    ("args", "code", "named"),
    [
        (["--task=/nonexistent/task.py"], errors.EXIT_USER_ERROR, "/nonexistent/task.py: no such"),
        (["--task=mnist_mlp"], errors.EXIT_USAGE, "--task=mnist_mlp needs --manual_dir"),
        # A task of the user's own needs no MNIST: the run gets as far as --only.
        (["--task=examples/convnet_task.py", "--only=nope"], errors.EXIT_USAGE, "unknown nope"),
        (["--onyl=tf_mgpu"], errors.EXIT_USAGE, "Unknown command line flag 'onyl'"),
        (
            ["--flagfile=/nonexistent/bench.cfg"],
            errors.EXIT_USAGE,
            "/nonexistent/bench.cfg: cannot",
        ),
        (["stray"], errors.EXIT_USAGE, "unexpected arguments: stray"),
    ],
    ids=["task_file", "mnist_without_manual_dir", "own_task", "typo", "flagfile", "stray"],
)
def test_the_documented_command_and_its_mistakes_are_one_line(args, code, named):
    # Before, each printed the module's help (78 lines) or absl's FATAL, exit 1.
    done = bench_alone(*args)
    assert done.returncode == code, done.stderr
    assert_one_line(done, named)
