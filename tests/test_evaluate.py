"""`python -m tf_mgpu.evaluate`: an exported model's loss and accuracy, on any replica count."""

import re
import sys

import numpy as np
import pytest

from tests import support
from tests.support import cpu_strategy, subset
from tf_mgpu.tasks.mnist import serving as export

LINE = re.compile(
    r"^tf_mgpu evaluate: test_loss (\S+)  test_acc (\S+)  examples (\S+)  model=(\S+)"
    r"  replicas=(\d+)$",
    re.M,
)


@pytest.fixture
def model_dir(exported_model_dir) -> str:
    return exported_model_dir


def expected(model_dir: str, images: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Loss and accuracy computed directly: one batch, one device, the sums in NumPy."""
    floats = images.astype(np.float32) / 255  # as the command feeds them (mnist_mlp.preprocess)
    probabilities = export.load(model_dir)(floats).numpy().astype(np.float64)
    chosen = probabilities[np.arange(len(labels)), labels]
    loss = -np.log(np.clip(chosen, export.MIN_PROBABILITY, 1.0)).mean()
    return float(loss), float(np.mean(probabilities.argmax(axis=1) == labels))


def run_evaluate(args: list[str], log_dir, timeout: float = 90) -> support.Finished:
    command = [sys.executable, "-m", "tf_mgpu.evaluate", *args]
    commands = {"evaluate": (command, support.environment())}
    return support.run_processes(commands, log_dir, timeout)["evaluate"]


@pytest.mark.parametrize(
    ("strategy", "replicas", "name"),
    [("one_device", 1, "saved_model"), ("mirrored", 2, "")],
    ids=["one_device_saved_model", "mirrored_2cpu_model_dir"],
)
def test_the_command_reports_what_the_model_scores_directly(
    mnist, mnist_data_dir, model_dir, tmp_path, strategy, replicas, name
):
    model = f"{model_dir}/{name}" if name else model_dir
    # 96 per replica: neither 96 nor 192 divides 10,000, so the last step is padded.
    finished = run_evaluate(
        [
            f"--model={model}",
            f"--strategy={strategy}",
            f"--num_cpu_devices={replicas}",
            "--batch_size=96",
            f"--data_dir={mnist_data_dir}",
        ],
        tmp_path,
    )
    assert finished.returncode == 0, finished.tail()
    found = LINE.findall(finished.stdout)
    assert len(found) == 1, finished.tail()
    loss, accuracy, examples, read, replicas_used = found[0]
    want_loss, want_accuracy = expected(model_dir, mnist.test.x, mnist.test.y)
    # Printed to 4 decimals: exact for an accuracy over 10,000 examples.
    assert float(accuracy) == pytest.approx(want_accuracy, abs=1e-9), finished.stdout
    assert float(loss) == pytest.approx(want_loss, abs=5.1e-5), finished.stdout
    assert want_accuracy > 0.8, "an untrained model (10%) would make the comparison weak"
    assert examples == "10,000", finished.stdout
    assert int(replicas_used) == replicas, finished.stdout
    assert read == (model if name else f"{model_dir}/model.keras"), finished.stdout


@pytest.mark.parametrize("form", ["model.keras", "saved_model"])
def test_every_example_counts_once_on_four_replicas(mnist, model_dir, form):
    # 1,000 examples at 4 x 48 = 192 per step: 6 steps, the last mostly padding.
    strategy = cpu_strategy(4)
    with strategy.scope():
        classifier = export.load(f"{model_dir}/{form}")
    split = subset(mnist, 0, 1000).test
    result = export.evaluate(classifier, strategy, split, batch_size=48)
    want_loss, want_accuracy = expected(model_dir, split.x, split.y)
    assert result["test_examples"] == 1000, result
    # Keras's accuracy metric keeps float32 counts: the exact ratio to float32's precision.
    assert result["test_accuracy"] == pytest.approx(want_accuracy, abs=1e-7), result
    assert result["test_loss"] == pytest.approx(want_loss, abs=1e-6), result


def test_a_model_path_that_does_not_exist_is_one_line_and_exit_3(mnist_data_dir, tmp_path):
    finished = run_evaluate(
        [f"--model={tmp_path}/nothing", f"--data_dir={mnist_data_dir}"], tmp_path
    )
    support.assert_one_line_exit(finished, 3, f"--model={tmp_path}/nothing does not exist")


def test_without_model_the_command_line_is_refused_with_exit_2(tmp_path):
    finished = run_evaluate([], tmp_path)
    support.assert_one_line_exit(finished, 2, "--model")
