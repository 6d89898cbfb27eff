"""`python -m tf_mgpu.predict`: real test digits as PNG files, named by an exported model;
arrays of inputs for a user task's model, with one output or several."""

import re
import sys

import keras
import numpy as np
import pytest
from PIL import Image

from tests import support
from tests.support import on_paper
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.tasks import adapter
from tf_mgpu.tasks.mnist import serving as export

LINE = re.compile(r"^(\S+): (\d) \(p=([0-9.]+)\)$", re.M)


@pytest.fixture
def model_dir(exported_model_dir) -> str:
    return exported_model_dir


def run_predict(args: list[str], log_dir, timeout: float = 90) -> support.Finished:
    command = [sys.executable, "-m", "tf_mgpu.predict", *args]
    commands = {"predict": (command, support.environment())}
    return support.run_processes(commands, log_dir, timeout)["predict"]


def confident_examples(model_dir: str, mnist) -> dict[int, int]:
    """Digit -> the first test example of it the model names right with p > 0.98."""
    labels = mnist.test.y
    probabilities = export.load(model_dir)(mnist.test.x).numpy()
    chosen = {}
    for index in np.flatnonzero(probabilities.max(axis=1) > 0.98):
        digit = int(labels[index])
        if probabilities[index].argmax() == digit:
            chosen.setdefault(digit, int(index))
    missing = set(range(10)) - set(chosen)
    assert not missing, f"no test example of {missing} is named right with p > 0.98"
    return chosen


def test_png_files_of_real_test_digits_get_their_labels(mnist, model_dir, tmp_path):
    chosen = confident_examples(model_dir, mnist)
    expected = {}  # file name -> its digit
    for digit, index in chosen.items():
        Image.fromarray(mnist.test.x[index], "L").save(tmp_path / f"mnist_{digit}.png")
        expected[f"mnist_{digit}.png"] = digit
    # Converted on reading: navy ink on white paper at 56x56; a 3 on a transparent 84x84.
    navy = tmp_path / "navy_on_paper_56.png"
    on_paper(mnist.test.x[chosen[7]], ink=(20, 30, 110), scale=2).save(navy)
    transparent = tmp_path / "transparent_84.png"
    rgba = np.zeros((84, 84, 4), np.uint8)
    rgba[..., 3] = np.kron(mnist.test.x[chosen[3]], np.ones((3, 3), np.uint8))
    Image.fromarray(rgba, "RGBA").save(transparent)
    expected.update({navy.name: 7, transparent.name: 3})

    paths = [str(tmp_path / name) for name in expected]
    finished = run_predict([f"--model={model_dir}", *paths], tmp_path)
    assert finished.returncode == 0, finished.tail()
    lines = LINE.findall(finished.stdout)
    found = {path.rsplit("/", 1)[-1]: (int(digit), float(p)) for path, digit, p in lines}
    assert list(found) == list(expected), finished.stdout  # one line per image, in order
    for name, digit in expected.items():
        assert found[name][0] == digit, (name, finished.stdout)
    probabilities = export.load(model_dir)(mnist.test.x[list(chosen.values())]).numpy()
    for (digit, index), p in zip(chosen.items(), probabilities, strict=True):
        assert found[f"mnist_{digit}.png"][1] == pytest.approx(p[digit], abs=5e-4), index


@pytest.mark.parametrize(
    ("args", "code", "named"),
    [
        (["{image}", "{missing}"], 3, "{missing} does not exist"),
        (["{not_image}"], 3, "cannot read image {not_image}"),
        ([], 2, "no inputs given"),
    ],
    ids=["missing_image", "not_an_image", "no_images"],
)
def test_bad_images_fail_in_one_line_before_the_model_loads(mnist, tmp_path, args, code, named):
    paths = {
        "image": tmp_path / "digit.png",
        "missing": tmp_path / "missing.png",
        "not_image": tmp_path / "notes.png",
    }
    Image.fromarray(mnist.test.x[0], "L").save(paths["image"])
    paths["not_image"].write_text("not an image")
    finished = run_predict(
        ["--model=/no/model/needed/yet", *(arg.format(**paths) for arg in args)], tmp_path
    )
    support.assert_one_line_exit(finished, code, named.format(**paths))


def test_a_model_path_that_does_not_exist_is_one_line_and_exit_3(mnist, tmp_path):
    image = tmp_path / "digit.png"
    Image.fromarray(mnist.test.x[0], "L").save(image)
    finished = run_predict([f"--model={tmp_path}/nothing", str(image)], tmp_path)
    support.assert_one_line_exit(finished, 3, f"--model={tmp_path}/nothing does not exist")


def test_arrays_of_inputs_for_a_user_task_get_the_models_own_predictions(tmp_path):
    task = str(support.ROOT / "examples" / "two_inputs_task.py")
    model_dir = tmp_path / "run"
    config = Config(task=task, batch_size=32, epochs=1, model_dir=str(model_dir))
    trained = training.run(config, strategy=support.cpu_strategy(1))
    x = adapter.load(task).load_data(config).test.take(slice(0, 300)).x
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **x)
    finished = run_predict([f"--model={model_dir}", f"--task={task}", str(inputs)], tmp_path)
    assert finished.returncode == 0, finished.tail()
    (line,) = finished.stdout.strip().splitlines()
    assert line.startswith(
        f"{inputs}: 300 examples -> {tmp_path}/inputs.predictions.npy (300, 3) float32; "
        f"argmax counts 0: "
    ), line
    predicted = np.load(tmp_path / "inputs.predictions.npy")
    expected = trained.state.model.predict(x, verbose=0)
    np.testing.assert_allclose(predicted, expected, atol=1e-6)


def test_a_model_with_several_outputs_saves_each_outputs_predictions_by_name(tmp_path):
    task = str(support.ROOT / "examples" / "two_heads_task.py")
    model_dir = tmp_path / "run"
    config = Config(task=task, batch_size=32, epochs=1, model_dir=str(model_dir))
    trained = training.run(config, strategy=support.cpu_strategy(1))
    x = adapter.load(task).load_data(config).test.take(slice(0, 300)).x
    inputs = tmp_path / "inputs.npy"
    np.save(inputs, x)
    finished = run_predict([f"--model={model_dir}", f"--task={task}", str(inputs)], tmp_path)
    assert finished.returncode == 0, finished.tail()
    (line,) = finished.stdout.strip().splitlines()
    assert line.startswith(
        f"{inputs}: 300 examples -> {tmp_path}/inputs.predictions.npz: price (300, 1) float32 "
        f"| kind (300, 3) float32; argmax counts 0: "
    ), line
    saved = np.load(tmp_path / "inputs.predictions.npz")
    assert saved.files == ["price", "kind"]  # the outputs' names, in the model's order
    expected = trained.state.model.predict(x, verbose=0)
    for name, want in zip(saved.files, expected, strict=True):
        np.testing.assert_allclose(saved[name], want, atol=1e-6, err_msg=name)


def test_mixed_or_unreadable_inputs_are_one_line_before_the_model_loads(tmp_path):
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, features=np.zeros((3, 16), np.float32))
    finished = run_predict(["--model=/no/such/model", str(inputs), "digit.png"], tmp_path)
    support.assert_one_line_exit(finished, 2, "give images or .npy/.npz arrays, not both")
    broken = tmp_path / "broken.npy"
    broken.write_text("not an array")
    finished = run_predict(["--model=/no/such/model", str(broken)], tmp_path / "logs2")
    support.assert_one_line_exit(finished, 3, f"cannot read {broken} as a NumPy array file")


@pytest.mark.parametrize("given", [False, True], ids=["task_from_flags_txt", "task_given"])
def test_arrays_for_a_model_whose_loss_is_a_function_of_its_task_file(
    task_file_run, tmp_path, given
):
    # Keras reads the model only with the task file's function, which --task names, or else
    # the run's flags.txt.
    inputs = tmp_path / "rows.npy"
    x = np.random.default_rng(5).normal(size=(40, 8)).astype("float32")
    np.save(inputs, x)
    task = [f"--task={task_file_run.task}"] if given else []
    finished = run_predict([f"--model={task_file_run.model_dir}", *task, str(inputs)], tmp_path)
    assert finished.returncode == 0, finished.tail()
    (line,) = finished.stdout.strip().splitlines()
    assert line == f"{inputs}: 40 examples -> {tmp_path}/rows.predictions.npy (40, 1) float32"
    model = keras.saving.load_model(task_file_run.model_dir / "model.keras", compile=False)
    want = model.predict(x, verbose=0)
    np.testing.assert_allclose(np.load(tmp_path / "rows.predictions.npy"), want, atol=1e-6)


def test_a_task_file_gone_since_the_run_is_one_line_naming_it_and_exit_3(
    run_of_a_gone_task, tmp_path
):
    model_dir, gone = run_of_a_gone_task
    inputs = tmp_path / "rows.npy"
    np.save(inputs, np.zeros((3, 8), np.float32))
    finished = run_predict([f"--model={model_dir}", str(inputs)], tmp_path)
    line = support.assert_one_line_exit(finished, 3, f"--task={gone}")
    assert f"{model_dir}/flags.txt" in line, line
