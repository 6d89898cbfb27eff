"""A fault that one worker sees and the others do not ends every worker after the same call,
with the same line and exit code, not the others with a lost peer: a non-finite loss (the
others see it a step later, in their next call, or never) and an out-of-memory error (it
ends the call on its own worker only)."""

import pytest

from tests import support
from tf_mgpu import errors

pytestmark = pytest.mark.cluster


def every_worker(tmp_path, workers: int, task: str, *flags: str) -> dict:
    """The one line each of `workers` real workers ends with, running `task` (a keras_files
    name) with `flags`."""

    def args(name: str) -> list[str]:
        return [
            f"--task={support.ROOT / 'tests' / 'keras_files' / f'{task}.py'}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=16",
            "--seed=3",
            "--nojit_compile",
            "--startup_timeout=120",
            *flags,
            f"--model_dir={tmp_path / name.replace(':', '_')}",
        ]

    spec = support.cluster_spec(workers=workers)
    return support.run_cluster(spec, args, tmp_path / "logs", timeout=300)


@pytest.mark.parametrize(
    ("workers", "flags"),
    [
        # One step per call: the bad step ends the call, and the other worker's loss is
        # finite until its next call.
        (2, ["--steps_per_loop=1"]),
        # The LossScaleOptimizer skips the step everywhere: only one worker ever sees it.
        (3, ["--dtype=mixed_float16"]),
    ],
    ids=["2_workers_bad_step_ends_the_call", "3_workers_mixed_float16"],
)
def test_one_workers_bad_step_stops_every_worker_with_its_line(tmp_path, workers, flags):
    finished = every_worker(tmp_path, workers, "huge_row", "--epochs=2", *flags)
    lines = {
        name: support.assert_one_line_exit(done, errors.EXIT_DIVERGED, "is not finite at step")
        for name, done in finished.items()
    }
    assert len(set(lines.values())) == 1, lines


def test_one_worker_out_of_memory_ends_every_worker_with_its_line(tmp_path):
    finished = every_worker(tmp_path, 2, "one_worker_out_of_memory", "--epochs=1")
    lines = {
        name: support.assert_one_line_exit(
            done, errors.EXIT_USER_ERROR, "out of memory on worker:1"
        )
        for name, done in finished.items()
    }
    assert len(set(lines.values())) == 1, lines
