"""SIGTERM and SIGINT to a single process: save at the next boundary, exit 75, resume exactly."""

import json
import signal
import time

import pytest

from tests import support
from tests.engine.state.test_checkpoint import STEPS_PER_EPOCH, small_run
from tests.outputs.test_tensorboard import scalars
from tf_mgpu import errors
from tf_mgpu.engine.control import actions
from tf_mgpu.engine.distribute import agreement
from tf_mgpu.engine.faults import stopping


def _agreement(stop: stopping.Stop, all_reduce) -> agreement.DecisionAgreement:
    """Two workers' agreement from this worker's side: `all_reduce` stands in for the
    collective, given this worker's stop flag and returning the sum over both."""

    def view() -> agreement.Decision:
        return agreement.Decision(stop.requested is not None, steps=8, eval_steps=4, save=False)

    def total(values: list[float]) -> list[float]:
        return [all_reduce(values[0]), *values[1:]]

    return agreement.DecisionAgreement(view, total=total, is_chief=True)


def test_a_signal_landing_during_the_agreement_waits_for_the_next_boundary():
    """Every worker must act on the all-reduced flag alone: this worker, signalled while
    the others already summed zero, must train on with them and stop at the next boundary."""
    stop = stopping.Stop()
    stop.training()
    sums = iter([0.0, 1.0])

    def all_reduce(flag: float) -> float:
        if flag == 0.0:  # the signal arrives while the collective runs
            stop._handle(signal.SIGTERM, None)
        return next(sums) + flag

    agreed = _agreement(stop, all_reduce)
    assert not agreed.agree().stop, "stopped alone: the other workers trained on"
    assert agreed.agree().stop
    assert stop.requested == "SIGTERM"


def test_a_signal_to_another_worker_is_named_as_such():
    stop = stopping.Stop()
    stop.training()
    agreed = _agreement(stop, lambda flag: flag + 1.0)
    assert agreed.agree().stop
    assert actions.StopOnSignal(stop, None, None, 1, agreed)._agreed()
    assert stop.requested == "a signal to another worker"


@pytest.mark.cluster
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_during_training_saves_stops_and_the_rerun_resumes(
    tmp_path, mnist_data_dir, reference_run, number
):
    model_dir = tmp_path / "run"
    # A checkpoint every 64 steps (two per epoch) and a training-curve point after every
    # call of 4 steps: the stop lands between two periodic saves, and the curve shows where.
    args = small_run(
        mnist_data_dir, model_dir, "--num_cpu_devices=1", "--checkpoint_steps=64", "--log_steps=4"
    )
    run = support.Started(args, tmp_path / "logs")
    try:
        support.wait_until(
            lambda: any(s % STEPS_PER_EPOCH for s in support.checkpoint_steps(model_dir)),
            120,
            "a mid-epoch checkpoint",
        )
        run.process.send_signal(number)
        sent = time.monotonic()
        stopped = run.wait(30)
    finally:
        run.wait(5)
    assert time.monotonic() - sent < 5, stopped.tail()
    name = signal.Signals(number).name
    line = support.assert_one_line_exit(stopped, errors.EXIT_STOPPED, f"{name}: saved")
    saved = support.checkpoint_steps(model_dir)[-1]
    assert f"ckpt-{saved};" in line, line
    # Saved where training stopped, not at the last periodic save before it.
    curve = scalars(str(model_dir / "tensorboard" / "train"))["loss"]
    assert curve[-1][0] == saved, f"trained to step {curve[-1][0]}, saved {saved}"
    if number == signal.SIGINT:
        return  # both signals save the same way; one resume proves the saved state whole

    resumed = support.run_main(args, tmp_path / "resumed", 240)
    reference, _ = reference_run(small_run(mnist_data_dir, None, "--num_cpu_devices=1"))
    assert resumed.returncode == 0, resumed.tail()
    assert f"ckpt-{saved} (step {saved:,}" in resumed.stdout, resumed.tail()
    assert support.digests(resumed) == support.digests(reference)


@pytest.mark.cluster
def test_a_signal_before_training_ends_the_run_at_once(tmp_path, mnist_data_dir):
    run = support.Started(
        small_run(mnist_data_dir, tmp_path / "run"), tmp_path / "logs", fresh=True
    )
    time.sleep(1.5)  # still importing TensorFlow
    run.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    stopped = run.wait(30)
    assert time.monotonic() - sent < 10, stopped.tail()
    support.assert_one_line_exit(stopped, errors.EXIT_STOPPED, "before training started")


def test_a_signal_while_evaluating_saves_the_epochs_steps_and_the_rerun_evaluates_it(
    tmp_path, monkeypatch
):
    """The task's callback signals its process at the first epoch's last batch: the stop
    is acted on after the evaluation's first call, the save holds every step of epoch 1
    (not yet counted done), and the rerun evaluates epoch 1 and ends as if never stopped."""
    task = support.ROOT / "tests" / "keras_files" / "stop_at_epoch_end.py"

    def args(model_dir):
        return [f"--task={task}", f"--model_dir={model_dir}", "--epochs=2", "--seed=3"]

    reference = support.run_main(args(tmp_path / "reference"), tmp_path / "logs0", 240)
    monkeypatch.setenv("STOP_AT_EPOCH_END", "1")
    stopped = support.run_main(args(tmp_path / "run"), tmp_path / "logs1", 240)
    monkeypatch.delenv("STOP_AT_EPOCH_END")
    line = support.assert_one_line_exit(stopped, errors.EXIT_STOPPED, "SIGTERM: saved")
    assert "ckpt-16;" in line, line  # every step of epoch 1
    assert not (tmp_path / "run" / "metrics.jsonl").read_text().strip()  # not evaluated

    resumed = support.run_main(args(tmp_path / "run"), tmp_path / "logs2", 240)
    assert resumed.returncode == 0, resumed.tail()
    assert "(step 16: epoch 1, step 16 of 16)" in resumed.stdout, resumed.tail()
    assert support.digests(resumed) == support.digests(reference)
    records = [
        json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    expected = [
        json.loads(line)
        for line in (tmp_path / "reference" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["epoch"] for r in records] == [1, 2]
    for got, want in zip(records, expected, strict=True):
        for key in ("train_loss", "test_loss", "test_accuracy"):
            assert got[key] == want[key], (key, got, want)


@pytest.mark.cluster
def test_a_signal_while_compiling_ends_the_run_at_once(tmp_path):
    """XLA compiles the slow convnet's whole call for seconds in C++, where Python runs no
    handler: the signal still ends the run at once, with nothing to save."""
    task = support.ROOT / "tests" / "keras_files" / "slow_convnet.py"
    run = support.Started(
        [f"--task={task}", f"--model_dir={tmp_path / 'run'}", "--jit_compile", "--epochs=1"],
        tmp_path / "logs",
    )
    try:
        support.wait_until(lambda: "tf_mgpu start:" in run.stdout(), 120, "the start line")
        run.process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        stopped = run.wait(60)
    finally:
        run.wait(5)
    took = time.monotonic() - sent
    print(f"SIGTERM while compiling: exit {stopped.returncode} after {took:.2f} s")
    support.assert_one_line_exit(stopped, errors.EXIT_STOPPED, "SIGTERM while compiling")
    assert took < 3, f"{took:.1f} s"
    assert not support.checkpoint_steps(tmp_path / "run")
