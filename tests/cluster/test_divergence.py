"""A loss that is not finite on one worker stops every worker after the same call, with the
same line and exit code: the others see it a step later, in their next call, or never."""

import pytest

from tests import support
from tf_mgpu import errors


@pytest.mark.cluster
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
    def args(name: str) -> list[str]:
        return [
            f"--task={support.ROOT / 'tests' / 'keras_files' / 'huge_row.py'}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=16",
            "--epochs=2",
            "--seed=3",
            "--nojit_compile",
            "--startup_timeout=120",
            *flags,
            f"--model_dir={tmp_path / name.replace(':', '_')}",
        ]

    spec = support.cluster_spec(workers=workers)
    finished = support.run_cluster(spec, args, tmp_path / "logs", timeout=300)
    lines = {
        name: support.assert_one_line_exit(done, errors.EXIT_DIVERGED, "is not finite at step")
        for name, done in finished.items()
    }
    assert len(set(lines.values())) == 1, lines
