"""Test setup shared by every file: logical CPU devices and real MNIST, prepared once."""

import dataclasses
import fcntl
import gc
import json
import os
import pathlib
import shutil
import sys

import keras
import pytest

from tests.support import (
    NUM_CPU_DEVICES,
    Finished,
    cpu_strategy,
    environment,
    mnist_manual_dir,
    run_main,
    run_processes,
    subset,
)
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import devices
from tf_mgpu.engine.input.data import Data
from tf_mgpu.tasks.mnist import data, preflight, serving

# Replicas need devices, and the split must happen before TensorFlow's first
# op, so it happens here, when pytest imports this file, before any test.
devices.split_cpu(NUM_CPU_DEVICES)


@pytest.fixture(autouse=True)
def _keras_floatx():
    """A float64 run sets Keras's floatx for its duration (`state.create_state`; only
    `training.run` puts it back): each test starts from the process's own."""
    floatx = keras.config.floatx()
    yield
    keras.config.set_floatx(floatx)


@pytest.fixture(autouse=True)
def _collect_garbage():
    """What a test leaves is collected right after it, and what survives is frozen out of
    later collections (`gc.freeze`), so each collection reads only one test's objects.

    Without this, the TensorFlow objects of hundreds of in-process tests (graphs, tf.data
    iterators and their threads) pile up until one automatic collection tears them all down
    inside some later test: 80 to 230 s instead of 3, a different test each run. py-spy
    showed that test's main thread in `gc_collect_main` and in iterator destructors waiting
    for their threads (BUILD_NOTES.md, "Test layout")."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def mnist_preparation(tmp_path_factory) -> tuple[str, dict[str, Finished]]:
    """MNIST prepared once for the whole run, as two offline workers on a fresh machine
    prepare it: both at once, into one fresh TFDS data dir, from the original files in
    TFDS's default manual folder (no --manual_dir), with no network.

    Returns the data dir and both processes' outcomes; the race itself is tested
    in tests/tasks/mnist/test_data.py, and `mnist_data_dir` fails if it failed. Under
    pytest-xdist the first pytest worker to need it prepares it, in the folder the
    workers share, and the other reads the outcome (a lock file orders them): once per
    run, not once per pytest worker.
    """
    manual_dir = mnist_manual_dir()
    if not all((manual_dir / name).is_file() for name in preflight.MANUAL_FILES):
        pytest.fail(
            f"the MNIST files are not in {manual_dir}: put the four .gz files there "
            f"or set TF_MGPU_MNIST_DIR (these tests never download)"
        )
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # every pytest worker's basetemp is a folder of this one
    root = shared / "mnist"
    outcome = shared / "mnist.json"
    with open(shared / "mnist.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not outcome.exists():
            finished = _prepare_mnist(manual_dir, root)
            outcome.write_text(json.dumps({k: dataclasses.asdict(v) for k, v in finished.items()}))
    finished = {k: Finished(**v) for k, v in json.loads(outcome.read_text()).items()}
    return str(root / "tfds"), finished


def _prepare_mnist(manual_dir: pathlib.Path, root: pathlib.Path) -> dict[str, Finished]:
    data_dir = root / "tfds"
    manual = data_dir / "downloads" / "manual"
    manual.mkdir(parents=True)
    for name in preflight.MANUAL_FILES:
        (manual / name).symlink_to(manual_dir / name)
    code = (
        "import sys\nfrom tf_mgpu.tasks.mnist import data\n"
        "m = data.load(sys.argv[1], None, 'train[:100]', 'test[:10]')\n"
        "print('loaded', len(m.train), len(m.test))\n"
    )
    # A network namespace of its own: loopback only (`unshare -rn`, no root needed).
    command = ["unshare", "-rn", sys.executable, "-c", code, str(data_dir)]
    return run_processes(
        {f"worker{i}": (command, environment()) for i in range(2)}, root / "logs", timeout=300
    )


@pytest.fixture(scope="session")
def mnist_data_dir(mnist_preparation) -> str:
    """A TFDS data dir with MNIST prepared from the original files, offline, once."""
    data_dir, finished = mnist_preparation
    for done in finished.values():
        if done.returncode != 0:
            pytest.fail(f"preparing MNIST failed:\n{done.tail()}")
    return data_dir


@pytest.fixture(scope="session")
def mnist(mnist_data_dir) -> Data:
    """All of real MNIST, in memory."""
    return data.load(mnist_data_dir, None)


@pytest.fixture(scope="session")
def exported_model_dir(mnist, tmp_path_factory) -> str:
    """A model trained for real (2 epochs on 4,096 examples, about 0.9 accurate) and
    exported with `export.save`, for the tests of evaluate and predict."""
    config = Config(batch_size=32, epochs=2, learning_rate=0.1, seed=0)
    trained = training.run(config, strategy=cpu_strategy(1), datasets=subset(mnist, 4096, 10))
    model_dir = str(tmp_path_factory.mktemp("export"))
    serving.save(trained.state.model, model_dir)
    return model_dir


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    """`run(args)`: one uninterrupted `python -m tf_mgpu.main` with `args` (given without
    --model_dir), run once per session however many tests compare against it; returns
    (its Finished, its model dir)."""
    runs = {}

    def run(args: list[str]) -> tuple[Finished, pathlib.Path]:
        assert not any(a.startswith("--model_dir") for a in args), "the reference picks its own"
        key = tuple(args)
        if key not in runs:
            tmp = tmp_path_factory.mktemp("reference")
            # Fresh: the runs compared with it are forked, and so share one hash seed (of str
            # and bytes); this one has its own, as separate processes have.
            done = run_main([*args, f"--model_dir={tmp / 'model'}"], tmp / "logs", 240, fresh=True)
            assert done.returncode == 0, done.tail()
            runs[key] = (done, tmp / "model")
        return runs[key]

    return run


@dataclasses.dataclass(frozen=True)
class Run:
    """A finished `python -m tf_mgpu.main` run: its --model_dir, its summary and its task."""

    model_dir: pathlib.Path
    summary: dict
    task: pathlib.Path | None = None


def _run_main(args: list[str], root: pathlib.Path) -> Run:
    model_dir = root / "run"
    done = run_main([*args, f"--model_dir={model_dir}"], root / "logs", 240)
    assert done.returncode == 0, done.tail()
    assert (model_dir / "flags.txt").is_file(), sorted(p.name for p in model_dir.iterdir())
    return Run(model_dir, json.loads((model_dir / "summary.json").read_text()))


@pytest.fixture(scope="session")
def mnist_run(mnist_data_dir, tmp_path_factory) -> Run:
    """README's kind of run, small: the built-in MNIST task on a slice of each split, its data
    named by --data_dir and --manual_dir; evaluate reads its flags.txt."""
    args = [
        "--strategy=one_device",
        "--epochs=1",
        "--batch_size=64",
        "--learning_rate=0.1",
        "--train_split=train[:2048]",
        "--test_split=test[:300]",
        f"--data_dir={mnist_data_dir}",
        f"--manual_dir={mnist_manual_dir()}",
    ]
    return _run_main(args, tmp_path_factory.mktemp("mnist_run"))


@pytest.fixture(scope="session")
def task_file_run(tmp_path_factory) -> Run:
    """A run of a task file (a copy of tests/keras_files/function_loss.py) whose loss is a
    plain function Keras finds only in that file; evaluate and predict read its flags.txt."""
    root = tmp_path_factory.mktemp("task_file_run")
    task = root / "my_task.py"
    task.write_text(
        (pathlib.Path(__file__).parent / "keras_files" / "function_loss.py").read_text()
    )
    run = _run_main([f"--task={task}", "--strategy=one_device", "--epochs=2"], root)
    return dataclasses.replace(run, task=task)


@pytest.fixture
def run_of_a_gone_task(task_file_run, tmp_path) -> tuple[pathlib.Path, pathlib.Path]:
    """A copy of `task_file_run`'s model dir whose flags.txt names a task file since moved
    away; returns the copy and the path its flags.txt names."""
    copy, gone = tmp_path / "run_copy", tmp_path / "moved_away" / "my_task.py"
    copy.mkdir()
    shutil.copy(task_file_run.model_dir / "model.keras", copy)
    recorded = (task_file_run.model_dir / "flags.txt").read_text()
    assert f"--task={task_file_run.task}\n" in recorded, recorded
    (copy / "flags.txt").write_text(
        recorded.replace(f"--task={task_file_run.task}", f"--task={gone}")
    )
    return copy, gone
