"""A worker's own error that ends training (out of memory, a full disk) ends every worker with
its line and exit code, not the others with a lost peer."""

import pytest

from tests import support
from tf_mgpu import errors

pytestmark = pytest.mark.cluster


def test_one_worker_out_of_memory_ends_every_worker_with_its_line(tmp_path):
    def args(name: str) -> list[str]:
        return [
            f"--task={support.ROOT / 'tests' / 'keras_files' / 'one_worker_out_of_memory.py'}",
            "--strategy=multi_worker_mirrored",
            "--batch_size=16",
            "--epochs=1",
            "--nojit_compile",
            "--startup_timeout=120",
            f"--model_dir={tmp_path / name.replace(':', '_')}",
        ]

    finished = support.run_cluster(
        support.cluster_spec(workers=2), args, tmp_path / "logs", timeout=300
    )
    lines = {
        name: support.assert_one_line_exit(
            done, errors.EXIT_USER_ERROR, "out of memory on worker:1"
        )
        for name, done in finished.items()
    }
    assert len(set(lines.values())) == 1, lines
