"""The command as users run it: flags, presets, user errors, outputs, real clusters."""

import dataclasses
import json
import pathlib
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest
from absl import flags
from absl.testing import flagsaver

from tests import support
from tf_mgpu import errors, main, tasks, timing, training
from tf_mgpu.cluster import local
from tf_mgpu.config import Config
from tf_mgpu.errors import SettingError, UserError
from tf_mgpu.tasks import mnist_mlp
from tf_mgpu.tasks.mnist import data, preflight

PRESETS = sorted((support.ROOT / "flags").glob("*.cfg"))


def quick(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs main where it fails before TensorFlow is imported."""
    return subprocess.run(
        support.main_command(*args),
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_helpfull_explains_every_flag():
    done = quick(["--helpfull"])  # absl exits 1 after printing help
    assert "Trains a Keras model" in done.stdout, done.stderr
    for holder in main._SETTINGS.values():
        boolean = flags.FLAGS[holder.name].boolean
        shown = f"--[no]{holder.name}" if boolean else f"--{holder.name}"
        assert shown in done.stdout, holder.name
    assert "The global batch is this times" in " ".join(done.stdout.split()), done.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--batch_size=0"], "batch_size"),
        (["--epochs=-1"], "epochs"),
        (["--learning_rate=0"], "--learning_rate=0.0: must be a positive finite number"),
        (["--learning_rate=inf"], "--learning_rate=inf: must be a positive finite number"),
        (["--learning_rate=nan"], "--learning_rate=nan: must be a positive finite number"),
        (["--batch_size=abc"], "batch_size"),
        (["--jit_compile=maybe"], "jit_compile"),
        (["--dtype=float16"], "<float32|mixed_bfloat16|mixed_float16|float64>"),
        (["--startup_timeout=inf"], "--startup_timeout=inf: must be a finite number"),
        (["--peer_timeout=0"], "peer_timeout"),
        (["--warmup_epochs=nan"], "--warmup_epochs=nan: must be a finite number"),
        (["--validation_split=nan"], "--validation_split=nan: must be a finite number"),
        (["--validation_split=0.95"], "--validation_split=0.95: must be a finite number from 0"),
        (["--steps_per_loop=fast"], "--steps_per_loop=fast: must be auto or a positive integer"),
        (["--batch_size=0", "--epochs=0"], "--batch_size=0: must be an integer of at least 1; "),
        (["--flagfile=/nonexistent/run.cfg"], "--flagfile=/nonexistent/run.cfg: cannot open it"),
        (["--checkpoint_steps=0"], "checkpoint_steps"),
        (["--strategy=horovod"], "<mirrored|multi_worker_mirrored|one_device|default>"),
        (["--num_cpu_devices=0"], "num_cpu_devices"),
        (["--no_such_flag=1"], "no_such_flag"),
        (["stray_argument"], "unexpected arguments: stray_argument"),
    ],
    ids=[
        "batch_size",
        "epochs",
        "learning_rate",
        "learning_rate_inf",
        "learning_rate_nan",
        "batch_size_type",
        "bool_type",
        "dtype",
        "startup_timeout_inf",
        "peer_timeout",
        "warmup_nan",
        "validation_nan",
        "validation_range",
        "steps_per_loop",
        "two_flags",
        "flagfile",
        "checkpoint_steps",
        "strategy",
        "cpu_devices",
        "unknown",
        "stray",
    ],
)
def test_bad_flags_fail_fast_naming_the_flag(args, named):
    done = quick(args)
    assert done.returncode == errors.EXIT_USAGE, done.stderr
    assert named in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "ERROR::" not in done.stderr, done.stderr


def test_flags_are_checked_by_the_configs_own_check():
    # One check for the command and tf_mgpu.train: a flag's message is the Config's.
    for field in dataclasses.fields(Config):
        meta, name = field.metadata, field.name
        if meta["lower"] is None:
            continue
        below = meta["lower"] - 1
        with pytest.raises(SettingError) as raised:
            Config(**{name: below})
        problem = str(raised.value).split(": ", 1)[1]
        with flagsaver.flagsaver(), pytest.raises(flags.IllegalFlagValueError) as flag_error:
            flags.FLAGS(["tf_mgpu", f"--{name}={below}"])
        assert str(flag_error.value) == f"flag --{name}={below}: {problem}", name


def preset_header(path: pathlib.Path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines if line.startswith("#"))


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_preset_parses_and_says_how_to_run_it(path):
    header = preset_header(path)
    assert path.read_text().startswith("#"), "a preset starts with its comment lines"
    assert f"python -m tf_mgpu.main --flagfile=flags/{path.name}" in header, header
    assert "Expected:" in header, header
    with flagsaver.flagsaver():
        flags.FLAGS(["tf_mgpu", f"--flagfile={path}"])
        config = main.config_from_flags()
    assert isinstance(config, Config)


def test_every_config_field_has_exactly_one_flag():
    assert sorted(h.name for h in main._SETTINGS.values()) == sorted(
        f.name for f in dataclasses.fields(Config)
    )


def test_each_flag_is_its_setting_declared_once_with_its_default_and_help():
    for field in dataclasses.fields(Config):
        holder = main._SETTINGS[field.name]
        assert holder.default == field.metadata.get("command_default", field.default), field.name
        help_text = field.metadata["help"].format(builtin=", ".join(tasks.BUILTIN))
        # absl puts an enum's choices in front: "<a|b>: help".
        assert flags.FLAGS[field.name].help.endswith(help_text), field.name
    # Only the model dir differs: the command writes there, tf_mgpu.train writes nothing.
    differ = [f.name for f in dataclasses.fields(Config) if "command_default" in f.metadata]
    assert differ == ["model_dir"], differ
    assert Config().model_dir is None


def test_help_lists_every_setting_as_the_commands_own():
    done = quick(["--help"])
    for name in main._SETTINGS:
        assert f"--{name}" in done.stdout or f"--[no]{name}" in done.stdout, name


def test_the_four_promised_presets_exist():
    assert {p.stem for p in PRESETS} >= {"default", "cpu_smoke", "multi_worker", "accuracy97"}


def test_recorded_flagfile_replays_the_same_config(tmp_path):
    with flagsaver.flagsaver():
        flags.FLAGS(["tf_mgpu", f"--flagfile={support.ROOT / 'flags' / 'cpu_smoke.cfg'}"])
        recorded, config = main.flagfile_text(), main.config_from_flags()
    (tmp_path / "flags.txt").write_text(recorded)
    with flagsaver.flagsaver():
        flags.FLAGS(["tf_mgpu", f"--flagfile={tmp_path / 'flags.txt'}"])
        assert main.config_from_flags() == config


def earlier_run(model_dir: pathlib.Path) -> dict[str, str]:
    """Files an earlier run left in `model_dir`, which a failing run must not touch."""
    model_dir.mkdir(parents=True, exist_ok=True)
    files = {"summary.json": '{"test_accuracy": 0.97}\n', "flags.txt": "--epochs=10\n"}
    for name, text in files.items():
        (model_dir / name).write_text(text)
    return files


def assert_untouched(model_dir: pathlib.Path, files: dict[str, str]) -> None:
    assert {p.name: p.read_text() for p in model_dir.iterdir()} == files


def assert_one_line_user_error(finished: support.Finished, expected: str) -> None:
    line = support.assert_one_line_exit(finished, errors.EXIT_USER_ERROR, expected)
    assert line.startswith("tf_mgpu: error: "), line


TWO_WORKERS = {"worker": ["localhost:1", "localhost:2"]}
# Seconds: a user error that needs no TensorFlow, start to exit, on a loaded 2-core machine.
PRE_TENSORFLOW_BOUND = 3


@pytest.mark.parametrize(
    ("args", "tf_config", "expected"),
    [
        ([], "not json", "TF_CONFIG is not valid JSON"),
        ([], {"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 2}}, "index 2"),
        (
            ["--strategy=one_device"],
            {"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 0}},
            "--strategy=one_device trains on one device",
        ),
        (["--manual_dir=/nonexistent"], None, "--manual_dir=/nonexistent lacks"),
        (["--train_split=train[:10]"], None, "has 10 examples, fewer than one global batch of 64"),
        (["--test_split=validation"], None, "--test_split=validation is not a valid TFDS split"),
        (["--model_dir=/dev/null/run"], None, "--model_dir=/dev/null/run cannot be created"),
        (["--model_dir=/dev/null"], None, "--model_dir=/dev/null is a file"),
        (
            ["--num_cpu_devices=2"],
            {"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 0}},
            "--num_cpu_devices=2 cannot apply under TF_CONFIG",
        ),
    ],
    ids=[
        "tf_config_json",
        "tf_config_index",
        "one_device_cluster",
        "manual_dir",
        "batch",
        "split",
        "model_dir",
        "model_dir_file",
        "cpu_devices_cluster",
    ],
)
def test_user_errors_are_one_line_and_keep_earlier_outputs(
    tmp_path, mnist_data_dir, args, tf_config, expected
):
    files = earlier_run(tmp_path / "model")
    done = support.run_main(
        [f"--data_dir={mnist_data_dir}", f"--model_dir={tmp_path / 'model'}", *args],
        tmp_path / "logs",
        timeout=120,
        tf_config=tf_config,
    )
    assert_one_line_user_error(done, expected)
    assert_untouched(tmp_path / "model", files)


@pytest.mark.parametrize(
    ("args", "tf_config", "expected"),
    [
        ([], "not json", "TF_CONFIG is not valid JSON"),
        (
            ["--strategy=one_device"],
            {"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 0}},
            "--strategy=one_device trains on one device",
        ),
        (
            ["--batch_size=1", "--batch_workers=3"],
            {"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 1}},
            "--batch_size=1 per replica on --batch_workers=3 workers does not split evenly",
        ),
        (["--manual_dir=/nonexistent"], None, "--manual_dir=/nonexistent lacks"),
        (["--model_dir=/dev/null"], None, "--model_dir=/dev/null is a file"),
        (["--model_dir=/dev/null/run"], None, "--model_dir=/dev/null/run cannot be created"),
        (["--data_dir=/nonexistent/tfds"], None, "MNIST is not prepared in /nonexistent/tfds"),
    ],
    ids=[
        "tf_config",
        "one_device_cluster",
        "batch_share",
        "manual_dir",
        "model_dir_file",
        "model_dir",
        "data",
    ],
)
def test_user_errors_that_need_no_tensorflow_come_before_it_loads(args, tf_config, expected):
    # Offline (`unshare -rn`: loopback only), as README's example of missing data runs.
    started = support.time.monotonic()
    done = subprocess.run(
        ["unshare", "-rn", sys.executable, "-X", "importtime", "-m", "tf_mgpu.main", *args],
        cwd=support.ROOT,
        env=support.environment(tf_config),
        capture_output=True,
        text=True,
        timeout=60,
    )
    seconds = support.time.monotonic() - started
    errors_printed = [line for line in done.stderr.splitlines() if line.startswith("tf_mgpu:")]
    assert done.returncode == errors.EXIT_USER_ERROR, done.stderr[-2000:]
    # 0.08-0.10 s here, start to exit; importing TensorFlow alone takes about 6 s.
    assert seconds < PRE_TENSORFLOW_BOUND, f"{seconds:.2f} s"
    assert len(errors_printed) == 1, errors_printed
    assert expected in errors_printed[0], errors_printed
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()]
    assert "tensorflow" not in imported, "TensorFlow was imported before the error"
    assert "tf_mgpu.cluster.startup_checks" in imported, (
        "the import trace is not what this test expects"
    )


IMPORT_TRACED_MAIN = (sys.executable, "-X", "importtime", "-m", "tf_mgpu.main")


def test_a_taken_port_is_one_line_naming_it_and_how_to_find_its_holder(tmp_path, mnist_data_dir):
    # Another program listens on this worker's TF_CONFIG port (on loopback only: TensorFlow's
    # server binds every interface, so it fails all the same). Before: TensorFlow loaded,
    # then "Could not start gRPC server" in a 36-line traceback, exit 1.
    files = earlier_run(tmp_path / "model")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spec = {"worker": [f"localhost:{port}", f"localhost:{local.free_ports(1)[0]}"]}
        started = support.time.monotonic()
        done = subprocess.run(
            [
                *IMPORT_TRACED_MAIN,
                f"--model_dir={tmp_path / 'model'}",
                f"--data_dir={mnist_data_dir}",
            ],
            cwd=support.ROOT,
            env=support.environment(local.tf_config(spec, "worker", 0)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        seconds = support.time.monotonic() - started
    finished = local.Finished("worker:0", done.returncode, done.stdout, done.stderr, seconds)
    line = support.assert_one_line_exit(finished, errors.EXIT_USER_ERROR, f"localhost:{port}")
    assert f"another process listens on port {port} (Address already in use)" in line, line
    assert f"`ss -ltnp 'sport = :{port}'`" in line, line
    imported = [entry.split("|")[-1].strip() for entry in done.stderr.splitlines()]
    assert "tensorflow" not in imported, "TensorFlow was imported before the error"
    assert seconds < PRE_TENSORFLOW_BOUND, f"{seconds:.2f} s"
    assert local.lost_a_port(finished), "tf_mgpu.launch no longer sees a port lost to a race"
    assert_untouched(tmp_path / "model", files)


def broken_manual_dir(tmp_path: pathlib.Path, kind: str) -> pathlib.Path:
    """A --manual_dir that is empty, a file, or holds a truncated or a wrong MNIST file."""
    path = tmp_path / "manual"
    if kind == "file":
        path.write_text("not a folder")
        return path
    path.mkdir()
    if kind == "empty":
        return path
    for name in preflight.MANUAL_FILES:
        shutil.copy(support.mnist_manual_dir() / name, path / name)
    target = path / preflight.MANUAL_FILES[0]
    if kind == "truncated":
        target.write_bytes(target.read_bytes()[:1000])
    else:
        target.write_text("this is not MNIST")
    return path


@pytest.mark.parametrize("kind", ["empty", "file", "truncated", "wrong"])
def test_a_broken_manual_dir_is_one_line_naming_it(tmp_path, kind):
    manual_dir = broken_manual_dir(tmp_path, kind)
    done = support.run_main(
        [
            f"--manual_dir={manual_dir}",
            f"--data_dir={tmp_path / 'tfds'}",  # empty: TFDS must prepare from manual_dir
            f"--model_dir={tmp_path / 'model'}",
        ],
        tmp_path / "logs",
        timeout=180,
    )
    expected = "could not prepare MNIST" if kind in ("truncated", "wrong") else "--manual_dir="
    line = support.assert_one_line_exit(done, errors.EXIT_USER_ERROR, expected)
    assert "--manual_dir" in line, line


def test_smoke_preset_trains_writes_and_replays_bit_for_bit(tmp_path, mnist_data_dir):
    common = [
        "--flagfile=flags/cpu_smoke.cfg",
        f"--manual_dir={support.mnist_manual_dir()}",
        f"--data_dir={mnist_data_dir}",
    ]
    # A fresh process, as a user's first command starts: its time line counts the import.
    first = support.run_main(
        [*common, f"--model_dir={tmp_path / 'a'}"], tmp_path / "a_logs", 180, fresh=True
    )
    assert first.returncode == 0, first.tail()
    assert "replicas=2 " in first.stdout, first.tail()
    assert "global_batch=128" in first.stdout, first.tail()
    assert len(first.lines("epoch ")) == 2, first.tail()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["test_examples"] == 2000
    assert summary["test_accuracy"] >= 0.85, summary["history"]
    assert summary["weights_sha256"] == support.digests(first)["sha256"]
    # What a replay needs besides flags.txt: the versions and devices it ran on.
    assert set(summary["versions"]) >= {"python", "tensorflow", "keras", "tensorflow_datasets"}
    assert summary["versions"]["tensorflow"].startswith("2.21"), summary["versions"]
    assert len(summary["devices"]) == 2, summary["devices"]
    assert all("CPU:" in d for d in summary["devices"]), summary["devices"]
    # Where the wall time went: the last line, and the same figures in the summary.
    seconds = summary["seconds"]
    assert set(seconds) == {*timing.PHASES, "other", "total"}, seconds
    parts = sum(value for name, value in seconds.items() if name != "total")
    assert abs(parts - seconds["total"]) < 0.01, seconds
    assert min(seconds["import"], seconds["compile"], seconds["train"]) > 0, seconds
    assert seconds["total"] <= first.seconds, (seconds, first.seconds)
    last = first.stdout.splitlines()[-1]
    assert last.startswith(f"tf_mgpu time: {seconds['total']:.1f} s = import "), first.tail()

    replay = support.run_main(
        [f"--flagfile={tmp_path / 'a' / 'flags.txt'}", f"--model_dir={tmp_path / 'b'}"],
        tmp_path / "b_logs",
        180,
    )
    assert replay.returncode == 0, replay.tail()
    assert support.digests(replay) == support.digests(first), (
        "replaying flags.txt gave other weights"
    )


def test_the_accuracy97_preset_reaches_97_percent(tmp_path, mnist_data_dir):
    # The preset as its header runs it (10 epochs of full MNIST, 4 s of training here).
    done = support.run_main(
        [
            "--flagfile=flags/accuracy97.cfg",
            f"--data_dir={mnist_data_dir}",
            f"--model_dir={tmp_path / 'model'}",
        ],
        tmp_path / "logs",
        240,
    )
    assert done.returncode == 0, done.tail()
    summary = json.loads((tmp_path / "model" / "summary.json").read_text())
    assert summary["test_examples"] == 10_000, summary["test_examples"]
    assert summary["test_accuracy"] >= 0.97, summary["history"]


def cluster_args(tmp_path: pathlib.Path, data_dir: str, *extra: str):
    """Per-task arguments: one small run, each task with its own --model_dir."""

    def args(task: str) -> list[str]:
        return [
            "--strategy=multi_worker_mirrored",
            f"--data_dir={data_dir}",
            "--train_split=train[:4096]",
            "--test_split=test[:1000]",
            "--epochs=2",
            "--batch_size=32",
            "--learning_rate=0.1",
            "--seed=5",
            "--startup_timeout=120",
            f"--model_dir={model_dir(tmp_path, task)}",
            *extra,
        ]

    return args


def model_dir(tmp_path: pathlib.Path, task: str) -> pathlib.Path:
    return tmp_path / task.replace(":", "_")


def assert_cluster_agrees(tmp_path, finished: dict, chief: str) -> dict:
    """Every task finished with the same weights; only the chief printed epochs and wrote."""
    tails = "\n".join(f.tail() for f in finished.values())
    for f in finished.values():
        assert f.returncode == 0, tails
    seen = support.digests(finished[chief])
    # The chief all-reduced every worker's digest: any other would have failed the run.
    assert seen.get("workers") == str(len(finished)), f"no agreement line: {seen}\n{tails}"
    for task, f in finished.items():
        wrote = model_dir(tmp_path, task).exists()
        assert wrote == (task == chief), f"{task} wrote outputs: {wrote}\n{tails}"
        if task != chief:
            support.assert_quiet_worker(f)
    assert finished[chief].lines("epoch "), tails
    summary = json.loads((model_dir(tmp_path, chief) / "summary.json").read_text())
    assert summary["weights_sha256"] == seen["sha256"]
    assert summary["test_examples"] == 1000, "evaluation missed examples of another worker"
    return summary


@pytest.mark.cluster
def test_two_workers_train_one_model_equal_to_one_device(tmp_path, mnist_data_dir):
    spec = support.cluster_spec(workers=2)
    finished = support.run_cluster(
        spec, cluster_args(tmp_path, mnist_data_dir), tmp_path / "logs", timeout=300
    )
    summary = assert_cluster_agrees(tmp_path, finished, chief="worker:0")
    assert (summary["strategy"], summary["num_workers"], summary["replicas"]) == (
        "multi_worker_mirrored",
        2,
        2,
    )
    assert summary["global_batch"] == 64

    # One device at the same global batch, same seed, same data: the same weights.
    config = Config(batch_size=64, epochs=2, learning_rate=0.1, seed=5)
    datasets = data.load(mnist_data_dir, None, "train[:4096]", "test[:1000]")
    one = training.run(config, strategy=support.cpu_strategy(1), datasets=datasets).state.model
    cluster = mnist_mlp.build_model()
    cluster.load_weights(model_dir(tmp_path, "worker:0") / "model.weights.h5")
    for a, b in zip(cluster.weights, one.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, rtol=0, err_msg=b.path)


@pytest.mark.cluster
def test_workers_that_end_with_different_weights_fail_saying_so(tmp_path, monkeypatch):
    # A user's callback shifts worker:1's weights after the last epoch, where no all-reduce
    # follows: the agreement the chief's "identical on all 2 workers" line reports must fail.
    monkeypatch.setenv("DIVERGE_ON_WORKER", "1")
    spec = support.cluster_spec(workers=2)

    def args(task: str) -> list[str]:
        return [
            "--strategy=multi_worker_mirrored",
            f"--task={support.ROOT / 'tests' / 'keras_files' / 'one_worker_diverges.py'}",
            "--epochs=1",
            "--batch_size=32",
            "--startup_timeout=120",
            f"--model_dir={model_dir(tmp_path, task)}",
        ]

    finished = support.run_cluster(spec, args, tmp_path / "logs", timeout=300)
    for task, done in finished.items():
        assert done.returncode == errors.EXIT_BUG, done.tail()
        assert "tf_mgpu: error: the workers ended with different weights" in done.stderr, (
            task,
            done.tail(),
        )
    assert not (model_dir(tmp_path, "worker:0") / "summary.json").exists()
    assert support.checkpoint_steps(model_dir(tmp_path, "worker:0")), "the checkpoint is gone"


@pytest.mark.cluster
def test_a_chief_and_two_workers_agree(tmp_path, mnist_data_dir):
    spec = support.cluster_spec(workers=2, chief=True)
    finished = support.run_cluster(
        spec, cluster_args(tmp_path, mnist_data_dir), tmp_path / "logs", timeout=300
    )
    summary = assert_cluster_agrees(tmp_path, finished, chief="chief:0")
    assert (summary["num_workers"], summary["replicas"]) == (3, 3)


@pytest.mark.cluster
def test_a_worker_whose_peer_never_starts_gives_up_in_time(tmp_path, mnist_data_dir):
    spec = support.cluster_spec(workers=2)
    files = earlier_run(model_dir(tmp_path, "worker:0"))
    args = cluster_args(tmp_path, mnist_data_dir, "--startup_timeout=5")("worker:0")
    tf_config = local.tf_config(spec, "worker", 0)
    done = support.run_main(args, tmp_path / "logs", timeout=120, tf_config=tf_config)
    assert done.returncode != 0, done.tail()
    assert "worker:0 waited 5 s for the other tasks" in done.stderr, done.tail()
    assert_untouched(model_dir(tmp_path, "worker:0"), files)


def test_divergence_stops_with_one_line_and_keeps_the_last_good_checkpoint(
    tmp_path, mnist_data_dir
):
    model_dir = tmp_path / "model"
    args = [
        f"--data_dir={mnist_data_dir}",
        f"--model_dir={model_dir}",
        "--train_split=train[:8192]",
        "--test_split=test[:1000]",
        "--num_cpu_devices=1",
        "--learning_rate=0.1",
    ]
    good = support.run_main([*args, "--epochs=1"], tmp_path / "good", 180)
    assert good.returncode == 0, good.tail()
    # A learning rate may change on resume; this one blows up in epoch 2.
    bad = support.run_main([*args, "--epochs=3", "--learning_rate=1e38"], tmp_path / "bad", 180)
    line = support.assert_one_line_exit(bad, errors.EXIT_DIVERGED, "is not finite at step")
    assert "(epoch 2, step" in line, line
    assert "learning rate 1e+38" in line, line
    assert support.checkpoint_steps(model_dir) == [128], "a checkpoint after the divergence"
    for name, value in support.checkpoint_tensors(model_dir / "checkpoints" / "ckpt-128").items():
        if np.issubdtype(np.asarray(value).dtype, np.floating):
            assert np.isfinite(value).all(), name
    for text in (model_dir / "metrics.jsonl").read_text().splitlines():
        json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in metrics.jsonl"))


def in_namespace_with_tmpfs(args: list[str], mount_options: str, out_dir: pathlib.Path):
    """Runs main with --model_dir on a tmpfs of its own (a real full or read-only disk),
    then copies what it left there to `out_dir`. Uses an unprivileged user and mount
    namespace (`unshare -rm`), so no root is needed and nothing outside changes."""
    out_dir.mkdir(parents=True)
    mount_point = out_dir.parent / "mnt"
    mount_point.mkdir()
    script = (
        f"mount -t tmpfs -o {mount_options} tmpfs {mount_point} && "
        f'"$@" --model_dir={mount_point}/model; code=$?; '
        f"cp -r {mount_point}/. {out_dir}/ 2>/dev/null; exit $code"
    )
    command = ["unshare", "-rm", "sh", "-c", script, "sh", *support.main_command(*args)]
    started = support.time.monotonic()
    done = subprocess.run(
        command,
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return support.Finished(
        "main", done.returncode, done.stdout, done.stderr, support.time.monotonic() - started
    )


def test_a_full_disk_at_save_time_is_one_line_and_the_previous_checkpoint_stays(
    tmp_path, mnist_data_dir
):
    args = [
        f"--data_dir={mnist_data_dir}",
        "--train_split=train[:8192]",
        "--test_split=test[:1000]",
        "--num_cpu_devices=1",
        "--epochs=20",
        "--checkpoint_steps=8",
        "--steps_per_loop=8",
    ]
    done = in_namespace_with_tmpfs(args, "size=1200k", tmp_path / "left")
    line = support.assert_one_line_exit(done, errors.EXIT_USER_ERROR, "No space left on device")
    assert "is intact" in line, line
    steps = support.checkpoint_steps(tmp_path / "left" / "model")
    assert steps, "no checkpoint survived"
    newest = tmp_path / "left" / "model" / "checkpoints" / f"ckpt-{steps[-1]}"
    assert support.checkpoint_tensors(newest), "the newest complete checkpoint is empty"


def test_a_read_only_model_dir_is_one_line_before_any_work(tmp_path, mnist_data_dir):
    done = in_namespace_with_tmpfs(
        [f"--data_dir={mnist_data_dir}", "--num_cpu_devices=1"], "ro", tmp_path / "left"
    )
    support.assert_one_line_exit(done, errors.EXIT_USER_ERROR, "cannot be created")


def test_a_model_dir_of_another_run_is_refused_and_left_alone(tmp_path, mnist_data_dir, capsys):
    args = [
        f"--data_dir={mnist_data_dir}",
        f"--model_dir={tmp_path / 'model'}",
        "--train_split=train[:4096]",
        "--test_split=test[:500]",
        "--num_cpu_devices=1",
        "--epochs=1",
    ]
    first = support.run_main(args, tmp_path / "first", 180)
    assert first.returncode == 0, first.tail()
    before = {p: p.read_bytes() for p in (tmp_path / "model").rglob("*") if p.is_file()}
    # The refusal and the "nothing to train" are the engine's; in this process they cost
    # no TensorFlow import (the command's one-line exit for a UserError is tested above).
    same = Config(
        data_dir=mnist_data_dir,
        model_dir=str(tmp_path / "model"),
        train_split="train[:4096]",
        test_split="test[:500]",
        epochs=1,
    )
    with pytest.raises(UserError, match="global_batch 64 there, 32 now"):
        training.run(dataclasses.replace(same, batch_size=32), strategy=support.cpu_strategy(1))
    after = {p: p.read_bytes() for p in (tmp_path / "model").rglob("*") if p.is_file()}
    assert after == before
    assert training.run(same, strategy=support.cpu_strategy(1)) is None
    assert "already holds 1 epochs" in capsys.readouterr().out
    clean = support.run_main([*args, "--batch_size=32", "--clean"], tmp_path / "clean", 180)
    assert clean.returncode == 0, clean.tail()
    assert "global_batch=32" in clean.stdout, clean.tail()
