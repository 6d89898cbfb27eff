"""A user's own Keras file, examples/convnet_task.py, that knows nothing of tf_mgpu.

It trains from `--task=FILE` on one device, on 2 mirrored logical CPUs and on
2 real MultiWorkerMirroredStrategy processes, and from `tf_mgpu.train`, each
reaching the test accuracy Keras `fit` reaches with the same data, epochs and
batch. The exported model evaluates to the loss training measured.
"""

import importlib.util
import json
import re
import sys

import keras
import pytest

import tf_mgpu
from tests import support

CONVNET = support.ROOT / "examples" / "convnet_task.py"
TRAIN, TEST, EPOCHS, GLOBAL_BATCH = 8192, 1000, 2, 64
# Keras fit and tf_mgpu see the same examples in other orders: their accuracies
# differ by chance (0.917 to 0.936 over three seeds of fit here); a broken loop loses far more.
MARGIN = 0.03


@pytest.fixture(scope="module", autouse=True)
def small_mnist():
    """The example reads MNIST from MNIST_DIR, cut to TRAIN and TEST examples."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MNIST_DIR", str(support.mnist_manual_dir()))
        patch.setenv("MNIST_TRAIN", str(TRAIN))
        patch.setenv("MNIST_TEST", str(TEST))
        yield


def user_module():
    spec = importlib.util.spec_from_file_location("convnet_task", CONVNET)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def keras_fit_accuracy() -> float:
    """Keras fit of the same file: same data, epochs and global batch, one device."""
    module = user_module()
    keras.utils.set_random_seed(0)
    (x, y), (x_test, y_test) = module.load_data()
    model = module.build_model()
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=EPOCHS, shuffle=True, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy > 0.88, f"Keras fit itself reached only {accuracy}"
    return accuracy


def task_flags(model_dir, batch_size: int) -> list[str]:
    return [
        f"--task={CONVNET.relative_to(support.ROOT)}",
        f"--epochs={EPOCHS}",
        f"--batch_size={batch_size}",
        "--nojit_compile",  # XLA's CPU convolutions were about 11x slower (BUILD_NOTES)
        "--steps_per_loop=32",
        f"--model_dir={model_dir}",
    ]


def summary_of(model_dir) -> dict:
    return json.loads((model_dir / "summary.json").read_text())


@pytest.mark.parametrize(
    ("strategy", "replicas"), [("one_device", 1), ("mirrored", 2)], ids=["one_device", "2cpu"]
)
def test_a_user_file_trains_from_the_command_line(tmp_path, keras_fit_accuracy, strategy, replicas):
    model_dir = tmp_path / "run"
    args = [
        *task_flags(model_dir, GLOBAL_BATCH // replicas),
        f"--strategy={strategy}",
        f"--num_cpu_devices={replicas}",
    ]
    done = support.run_main(args, tmp_path / "logs", timeout=300)
    assert done.returncode == 0, done.tail()
    assert "model=examples/convnet_task.py" in done.stdout, done.tail()
    summary = summary_of(model_dir)
    assert (summary["replicas"], summary["global_batch"]) == (replicas, GLOBAL_BATCH)
    assert summary["test_examples"] == TEST
    assert summary["test_accuracy"] >= keras_fit_accuracy - MARGIN, (summary, keras_fit_accuracy)
    assert (model_dir / "model.keras").is_file(), sorted(p.name for p in model_dir.iterdir())

    # The export, read back by evaluate on the task's test split: the loss training measured.
    evaluated = support.run_processes(
        {
            "evaluate": (
                [
                    sys.executable,
                    "-m",
                    "tf_mgpu.evaluate",
                    f"--task={CONVNET}",
                    f"--model={model_dir}",
                    "--strategy=one_device",
                ],
                support.environment(),
            )
        },
        tmp_path / "evaluate",
        timeout=120,
    )["evaluate"]
    assert evaluated.returncode == 0, evaluated.tail()
    loss = float(re.search(r"test_loss (\S+)", evaluated.stdout).group(1))
    assert loss == pytest.approx(summary["test_loss"], abs=1e-4), evaluated.stdout


@pytest.mark.cluster
def test_a_user_file_trains_on_two_real_workers(tmp_path, keras_fit_accuracy):
    spec = support.cluster_spec(workers=2)
    finished = support.run_cluster(
        spec,
        lambda name: [
            *task_flags(tmp_path / name.replace(":", "_"), GLOBAL_BATCH // 2),
            "--strategy=multi_worker_mirrored",
        ],
        tmp_path / "logs",
        timeout=300,
    )
    for done in finished.values():
        assert done.returncode == 0, done.tail()
    chief = finished["worker:0"]
    assert support.digests(chief)["workers"] == "2", chief.tail()
    summary = summary_of(tmp_path / "worker_0")
    assert (summary["strategy"], summary["replicas"]) == ("multi_worker_mirrored", 2)
    assert summary["test_examples"] == TEST
    assert summary["test_accuracy"] >= keras_fit_accuracy - MARGIN, (summary, keras_fit_accuracy)


def test_a_user_module_trains_from_python(keras_fit_accuracy):
    summary = tf_mgpu.train(
        task=user_module(),
        strategy="one_device",
        epochs=EPOCHS,
        batch_size=GLOBAL_BATCH,
        jit_compile=False,
    )
    assert summary["task_name"] == "convnet_task"
    assert summary["test_examples"] == TEST
    assert summary["test_accuracy"] >= keras_fit_accuracy - MARGIN, (summary, keras_fit_accuracy)
