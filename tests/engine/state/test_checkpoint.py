"""Checkpoints: what they hold, how they fail, and exact resume after a real SIGKILL."""

import json

import pytest
import tensorflow as tf

from tests import support
from tests.keras.helpers import load
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.control import actions
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.errors import UserError

STEPS_PER_EPOCH = 128  # train[:8192] at a global batch of 64


def variables():
    return {"w": tf.Variable([1.0, 2.0]), "step": tf.Variable(0, dtype=tf.int64)}


def test_restore_brings_back_the_newest_checkpoint(tmp_path):
    objects = variables()
    saver = checkpoint.Checkpoints(objects, str(tmp_path), is_chief=True)
    for step in (10, 20):
        objects["w"].assign([float(step), 0.0])
        saver.save(step)
    objects["w"].assign([0.0, 0.0])
    assert checkpoint.step_of(saver.restore()) == 20
    assert objects["w"].numpy().tolist() == [20.0, 0.0]


def test_only_the_newest_few_are_kept(tmp_path):
    saver = checkpoint.Checkpoints(variables(), str(tmp_path), is_chief=True, keep=2)
    for step in (1, 2, 3, 4):
        saver.save(step)
    assert [checkpoint.step_of(p) for p in saver.paths()] == [3, 4]
    left = sorted(p.name for p in (tmp_path / checkpoint.DIRECTORY).iterdir())
    assert all(name.startswith(("ckpt-3.", "ckpt-4.")) for name in left), left


def test_a_run_keeps_the_newest_three_checkpoints_by_default(tmp_path):
    # 1,024 examples at a global batch of 32, 2 epochs: a save every 8 steps, 8 in all.
    config = Config(
        batch_size=32,
        epochs=2,
        seed=3,
        steps_per_loop=8,
        checkpoint_steps=8,
        model_dir=str(tmp_path / "model"),
    )
    training.run(config, load("loss_reduction"), strategy=support.cpu_strategy(1))
    assert support.checkpoint_steps(tmp_path / "model") == [48, 56, 64]
    left = {p.name.split(".")[0] for p in (tmp_path / "model" / checkpoint.DIRECTORY).iterdir()}
    assert left == {"ckpt-48", "ckpt-56", "ckpt-64", checkpoint.RUN_FILE.split(".")[0]}, left


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0.0, [32, 64]), (1e-9, [48, 56, 64])],
    ids=["by_steps_only", "by_time"],
)
def test_checkpoint_secs_saves_between_calls_when_the_time_has_come(tmp_path, seconds, expected):
    # 1,024 examples at a global batch of 32, blocks of 8 steps: a save is due by time after
    # every call when the interval is tiny (the newest 3 are kept); with 0, only the epochs'
    # ends save (checkpoint_steps is out of reach).
    config = Config(
        batch_size=32,
        epochs=2,
        seed=3,
        checkpoint_steps=10**6,
        checkpoint_secs=seconds,
        steps_per_loop=8,
        model_dir=str(tmp_path / "model"),
    )
    training.run(config, load("loss_reduction"), strategy=support.cpu_strategy(1))
    assert support.checkpoint_steps(tmp_path / "model") == expected


def test_checkpoint_secs_counts_from_the_last_save():
    class Trainer:
        def step(self):
            return 0

    now = [100.0]
    saving = actions.Checkpointing(
        Trainer(), None, every=10**6, every_seconds=60, clock=lambda: now[0]
    )
    assert not saving.due_by_time()
    now[0] = 159.9
    assert not saving.due_by_time()
    now[0] = 160.0
    assert saving.due_by_time()
    assert not actions.Checkpointing(Trainer(), None, every=1, every_seconds=0).due_by_time()


def test_a_truncated_latest_checkpoint_is_reported_and_the_previous_one_used(tmp_path):
    objects, warnings = variables(), []
    saver = checkpoint.Checkpoints(objects, str(tmp_path), is_chief=True, warn=warnings.append)
    objects["w"].assign([5.0, 5.0])
    saver.save(5)
    objects["w"].assign([6.0, 6.0])
    saver.save(6)
    data_file = next((tmp_path / checkpoint.DIRECTORY).glob("ckpt-6.data-*"))
    data_file.write_bytes(data_file.read_bytes()[:7])
    assert checkpoint.step_of(saver.restore()) == 5
    assert objects["w"].numpy().tolist() == [5.0, 5.0]
    assert len(warnings) == 1, warnings
    assert "ckpt-6 is unreadable" in warnings[0], warnings


def test_when_no_checkpoint_can_be_read_the_user_is_told_to_start_over(tmp_path):
    saver = checkpoint.Checkpoints(variables(), str(tmp_path), is_chief=True, warn=lambda _: None)
    saver.save(1)
    index = tmp_path / checkpoint.DIRECTORY / "ckpt-1.index"
    index.write_bytes(b"garbage")
    with pytest.raises(UserError, match=r"no checkpoint in .* can be read.*--clean"):
        saver.restore()


def test_a_task_that_is_not_the_chief_writes_nothing_into_model_dir(tmp_path):
    saver = checkpoint.Checkpoints(variables(), str(tmp_path), is_chief=False)
    saver.save(1)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_directory_is_one_user_error_and_the_last_checkpoint_stays(tmp_path):
    saver = checkpoint.Checkpoints(variables(), str(tmp_path), is_chief=True)
    saver.save(1)
    directory = tmp_path / checkpoint.DIRECTORY
    blocked = tmp_path / "moved"
    directory.rename(blocked)
    directory.write_text("a file where the checkpoint folder was")
    with pytest.raises(UserError, match="cannot write a checkpoint into") as error:
        saver.save(2)
    assert "\n" not in str(error.value)
    assert "rerun the same command to resume" in str(error.value)
    assert (blocked / "ckpt-1.index").exists()


FINGERPRINT = {
    "weights": [["dense/kernel", [784, 128]]],
    "train_examples": 60000,
    "seed": 0,
    "global_batch": 64,
    "learning_rate": 0.01,
    "scale_lr": False,
    "warmup_epochs": 0.0,
    "dtype": "float32",
}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"weights": [["dense/kernel", [784, 256]]]}, "another model"),
        ({"global_batch": 128}, "global_batch 64 there, 128 now"),
        ({"seed": 3}, "seed 0 there, 3 now"),
        ({"train_examples": 8192}, "another training split"),
    ],
)
def test_a_run_that_would_change_the_trajectory_is_incompatible(change, named):
    why = checkpoint.incompatibility(FINGERPRINT, {**FINGERPRINT, **change})
    assert why is not None
    assert named in why, why


def test_a_new_learning_rate_is_allowed_and_reported():
    current = {**FINGERPRINT, "learning_rate": 0.001}
    assert checkpoint.incompatibility(FINGERPRINT, current) is None
    assert checkpoint.changes(FINGERPRINT, current) == ["--learning_rate 0.01 -> 0.001"]


# -- Exact resume after a real SIGKILL, mid-epoch ------------------------------


def small_run(data_dir: str, model_dir=None, *extra: str) -> list[str]:
    """3 epochs of 128 steps, 4 steps per call, a checkpoint every 8 steps; without
    --model_dir when `model_dir` is None (for the `reference_run` fixture)."""
    return [
        f"--data_dir={data_dir}",
        *([f"--model_dir={model_dir}"] if model_dir is not None else []),
        "--train_split=train[:8192]",
        "--test_split=test[:1000]",
        "--epochs=3",
        "--learning_rate=0.1",
        "--seed=7",
        "--steps_per_loop=4",
        "--checkpoint_steps=8",
        *extra,
    ]


def assert_resumes_to_the_same_weights(tmp_path, data_dir, reference_run, *extra: str) -> None:
    reference, _ = reference_run(small_run(data_dir, None, *extra))
    model_dir = tmp_path / "run"
    args = small_run(data_dir, model_dir, *extra)
    latest = support.kill_mid_epoch(args, tmp_path / "logs", model_dir, STEPS_PER_EPOCH)
    resumed = support.run_main(args, tmp_path / "resumed_logs", 240)
    assert resumed.returncode == 0, resumed.tail()
    epoch, step = divmod(latest, STEPS_PER_EPOCH)
    assert (
        f"tf_mgpu resume: from {model_dir}/checkpoints/ckpt-{latest} "
        f"(step {latest:,}: epoch {epoch + 1}, step {step} of {STEPS_PER_EPOCH})"
    ) in resumed.stdout, resumed.tail()
    assert support.digests(resumed) == support.digests(reference), resumed.tail()
    logged = [json.loads(line) for line in (model_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in logged] == [1, 2, 3]


@pytest.mark.cluster
def test_one_process_killed_mid_epoch_resumes_bit_for_bit(tmp_path, mnist_data_dir, reference_run):
    assert_resumes_to_the_same_weights(
        tmp_path, mnist_data_dir, reference_run, "--num_cpu_devices=1"
    )


@pytest.mark.cluster
def test_streamed_input_on_two_devices_killed_mid_epoch_resumes_bit_for_bit(
    tmp_path, mnist_data_dir, reference_run
):
    # Mirrored over 2 devices and streamed at once: the pipelines skip the resumed
    # epoch's first steps per replica (one process, one device, resident: the test above).
    assert_resumes_to_the_same_weights(
        tmp_path,
        mnist_data_dir,
        reference_run,
        "--num_cpu_devices=2",
        "--batch_size=32",
        "--input=stream",
    )


def test_a_peer_lost_during_a_save_is_not_called_a_disk_error(tmp_path):
    # What the survivors' write raised when a launcher's worker was killed mid-save: the
    # write's collective failed. failures.py must see it, to name the lost peer (exit 6).
    saver = checkpoint.Checkpoints(variables(), str(tmp_path), is_chief=True)

    def failing(error):
        def write():
            raise error

        return write

    for lost in (
        tf.errors.UnavailableError(None, None, "recvmsg:Connection reset by peer"),
        tf.errors.UnknownError(None, None, "Collective ops is aborted by: Socket closed"),
    ):
        with pytest.raises(type(lost)):
            saver._guard(failing(lost))
    # The disk's errors stay one line, named or not.
    for disk, named in (
        (tf.errors.UnknownError(None, None, "write: No space left on device"), "No space left"),
        (tf.errors.UnknownError(None, None, "write: Disk quota exceeded"), "Disk quota exceeded"),
    ):
        with pytest.raises(UserError, match=rf"cannot write a checkpoint .*{named}"):
            saver._guard(failing(disk))
