"""SIGTERM and SIGINT to a single process: save at the next boundary, exit 75, resume exactly."""

import signal
import time

import pytest

from tests import support
from tests.engine.test_checkpoint import STEPS_PER_EPOCH, small_run
from tests.outputs.test_tensorboard import scalars
from tf_mgpu import errors
from tf_mgpu.engine import stopping


def test_a_signal_landing_during_the_agreement_waits_for_the_next_boundary():
    """Every worker must act on the all-reduced flag alone: this worker, signalled while
    the others already summed zero, must train on with them and stop at the next boundary."""
    stop = stopping.Stop()
    stop._training = True
    sums = iter([0.0, 1.0])

    def all_reduce(flag: float) -> float:
        if flag == 0.0:  # the signal arrives while the collective runs
            stop._handle(signal.SIGTERM, None)
        return next(sums) + flag

    stop._agree = all_reduce
    assert not stop.agreed(), "stopped alone: the other workers trained on"
    assert stop.agreed()
    assert stop.requested == "SIGTERM"


def test_a_signal_to_another_worker_is_named_as_such():
    stop = stopping.Stop()
    stop._training = True
    stop._agree = lambda flag: flag + 1.0
    assert stop.agreed()
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
    run = support.Started(small_run(mnist_data_dir, tmp_path / "run"), tmp_path / "logs")
    time.sleep(1.5)  # still importing TensorFlow
    run.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    stopped = run.wait(30)
    assert time.monotonic() - sent < 10, stopped.tail()
    support.assert_one_line_exit(stopped, errors.EXIT_STOPPED, "before training started")
