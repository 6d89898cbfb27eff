"""The collectives that keep workers in step: here, the guard on the step workers start from."""

import shutil

import numpy as np
import pytest

from tests import support
from tests.keras.helpers import load, path_of
from tf_mgpu import errors, training
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.tasks import mnist_mlp


def files(root) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.cluster
def test_workers_that_restore_different_checkpoints_refuse_to_train(tmp_path):
    # The chief's --model_dir holds a checkpoint at step 16 (an epoch of 1,024 examples at
    # a global batch of 64, trained here on one device); worker:1 is given an empty one,
    # as a worker whose storage is not the chief's would see it. Both must refuse.
    chief_dir, other_dir = tmp_path / "chief", tmp_path / "other"
    config = Config(batch_size=64, epochs=1, seed=0, model_dir=str(chief_dir))
    training.run(config, load("loss_reduction"), strategy=support.cpu_strategy(1))
    assert support.checkpoint_steps(chief_dir) == [16]
    before = files(chief_dir)

    def args(task: str) -> list[str]:
        return [
            "--strategy=multi_worker_mirrored",
            f"--task={path_of('loss_reduction')}",
            f"--model_dir={chief_dir if task == 'worker:0' else other_dir}",
            "--batch_size=32",
            "--epochs=2",
            "--seed=0",
            "--startup_timeout=60",
            "--peer_timeout=30",
        ]

    spec = support.cluster_spec(workers=2)
    finished = support.run_cluster(spec, args, tmp_path / "logs", timeout=150)
    for task, step in (("worker:0", 16), ("worker:1", 0)):
        line = support.assert_one_line_exit(
            finished[task], errors.EXIT_USER_ERROR, "the workers restored different checkpoints"
        )
        assert f"(this one is at step {step})" in line, line
    assert files(chief_dir) == before, "the chief's model dir changed"
    assert not other_dir.exists(), "a worker other than the chief wrote into its --model_dir"


@pytest.mark.cluster
def test_three_workers_refuse_when_one_restored_the_others_mean_step(tmp_path):
    # Checkpoints at steps 8 and 16 of a global batch of 48 (3 x 16); the chief restores 16,
    # worker:1 8, worker:2 nothing: 8 is their mean, so a sum of the steps alone lets
    # worker:1 train while the others refuse, and its next collective then hangs.
    trained = tmp_path / "trained"
    config = Config(
        batch_size=48,
        epochs=1,
        seed=0,
        checkpoint_steps=8,
        steps_per_loop=8,
        model_dir=str(trained),
    )
    training.run(config, load("loss_reduction"), strategy=support.cpu_strategy(1))
    assert support.checkpoint_steps(trained) == [8, 16, 21]
    dirs = {"worker:0": (16, [21]), "worker:1": (8, [16, 21]), "worker:2": (0, None)}
    for task, (_, dropped) in dirs.items():
        target = tmp_path / task.replace(":", "_")
        if dropped is not None:
            shutil.copytree(trained, target)
            for step in dropped:
                for path in (target / "checkpoints").glob(f"ckpt-{step}.*"):
                    path.unlink()

    def args(task: str) -> list[str]:
        return [
            "--strategy=multi_worker_mirrored",
            f"--task={path_of('loss_reduction')}",
            f"--model_dir={tmp_path / task.replace(':', '_')}",
            "--batch_size=16",
            "--epochs=2",
            "--seed=0",
            "--checkpoint_steps=8",
            "--startup_timeout=60",
            "--peer_timeout=30",
        ]

    finished = support.run_cluster(
        support.cluster_spec(workers=3), args, tmp_path / "logs", timeout=150
    )
    for task, (step, _) in dirs.items():
        line = support.assert_one_line_exit(
            finished[task], errors.EXIT_USER_ERROR, "the workers restored different checkpoints"
        )
        assert f"(this one is at step {step})" in line, line


def test_weights_digest_sees_a_one_ulp_change():
    net = mnist_mlp.build_model()
    before = collectives.weights_digest(net)
    assert collectives.weights_digest(net) == before
    kernel = net.weights[0]
    value = kernel.numpy()
    value[0, 0] = np.nextafter(value[0, 0], np.float32(1))
    kernel.assign(value)
    assert collectives.weights_digest(net) != before
