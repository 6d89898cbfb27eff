"""`python -m tf_mgpu.evaluate`: an exported model's loss and accuracy, on any replica count."""

import re
import sys

import numpy as np
import pytest

from tests import support
from tests.support import cpu_strategy, subset
from tf_mgpu.tasks.mnist import serving as export

LINE = re.compile(
    r"^tf_mgpu evaluate: test_loss (\S+)  test_acc (\S+)  examples (\S+) of (.+?)"
    r"  model=(\S+)  replicas=(\d+)$",
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
    loss, accuracy, examples, split, read, replicas_used = found[0]
    want_loss, want_accuracy = expected(model_dir, mnist.test.x, mnist.test.y)
    # Printed to 4 decimals: exact for an accuracy over 10,000 examples.
    assert float(accuracy) == pytest.approx(want_accuracy, abs=1e-9), finished.stdout
    assert float(loss) == pytest.approx(want_loss, abs=5.1e-5), finished.stdout
    assert want_accuracy > 0.8, "an untrained model (10%) would make the comparison weak"
    assert examples == "10,000", finished.stdout
    assert split == "test", finished.stdout  # the default: this model dir has no flags.txt
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


# The run's own flags.txt: the task, the data and the split a run dir is scored on.


def test_a_run_dir_alone_is_scored_on_the_runs_data_and_split_from_its_flags_txt(
    mnist_run, tmp_path
):
    # No --data_dir, --manual_dir or --test_split: without the run's flags.txt this reads
    # TFDS's own data dir and scores all 10,000 test examples.
    finished = run_evaluate([f"--model={mnist_run.model_dir}"], tmp_path)
    assert finished.returncode == 0, finished.tail()
    ((loss, accuracy, examples, split, read, _),) = LINE.findall(finished.stdout)
    assert examples == "300", finished.stdout
    assert split == f"test[:300] (from {mnist_run.model_dir}/flags.txt)", finished.stdout
    assert read == f"{mnist_run.model_dir}/model.keras", finished.stdout
    # The figures the run itself printed for its test split.
    assert float(accuracy) == pytest.approx(mnist_run.summary["test_accuracy"], abs=5e-5)
    assert float(loss) == pytest.approx(mnist_run.summary["test_loss"], abs=2e-4)


def test_a_flag_given_wins_over_the_runs_and_an_export_inside_the_run_dir_reads_it(
    mnist_run, tmp_path
):
    finished = run_evaluate(
        [f"--model={mnist_run.model_dir}/saved_model", "--test_split=test[:100]"], tmp_path
    )
    assert finished.returncode == 0, finished.tail()
    ((_, _, examples, split, read, _),) = LINE.findall(finished.stdout)
    # The data dir still comes from flags.txt beside saved_model/; the split as given.
    assert (examples, split) == ("100", "test[:100]"), finished.stdout
    assert read == f"{mnist_run.model_dir}/saved_model", finished.stdout


def test_a_task_files_run_dir_is_evaluated_with_its_task_from_flags_txt(task_file_run, tmp_path):
    # Without --task: the task file that defines the model's loss function, as the run named it.
    finished = run_evaluate([f"--model={task_file_run.model_dir}"], tmp_path)
    assert finished.returncode == 0, finished.tail()
    (line,) = finished.lines("tf_mgpu evaluate:")
    summary = task_file_run.summary
    assert f"test_loss {summary['test_loss']:.4f}  test_mae {summary['test_mae']:.4f}" in line
    assert "  examples 128 of load_data()'s test split  " in line, line


def test_a_task_file_gone_since_the_run_is_one_line_naming_it_and_exit_3(
    run_of_a_gone_task, tmp_path
):
    model_dir, gone = run_of_a_gone_task
    finished = run_evaluate([f"--model={model_dir}"], tmp_path)
    line = support.assert_one_line_exit(finished, 3, f"--task={gone}")
    assert f"{model_dir}/flags.txt" in line, line
    assert "pass --task=" in line, line
