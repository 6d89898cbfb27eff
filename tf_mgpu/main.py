"""Trains a Keras model (a task file, or the built-in MNIST MLP) on any tf.distribute strategy.

  python -m tf_mgpu.main --strategy=mirrored                  # every local GPU, or the CPU
  python -m tf_mgpu.main --task=my_task.py --strategy=mirrored  # your build_model/load_data
  python -m tf_mgpu.main --flagfile=flags/cpu_smoke.cfg --manual_dir=DIR   # offline, seconds
  TF_CONFIG=... python -m tf_mgpu.main --strategy=multi_worker_mirrored   # on every worker

The default task is the seed tutorial's MNIST MLP; offline, --manual_dir
names a folder with the four original MNIST .gz files.
Outputs (summary.json, metrics.jsonl, flags.txt, model.weights.h5) and
checkpoints go to --model_dir; running the same command again resumes there.
Exit codes: see tf_mgpu/errors.py and docs/failures.md.
"""

# This is the only module that reads flags: it turns them into one
# `tf_mgpu.config.Config` and hands that to `tf_mgpu.training.run`.

import functools
import math
import os
import sys

from absl import app, flags

from tf_mgpu import api, cli, compile_cache, tasks, timing
from tf_mgpu.cluster import kubernetes, slurm, supervisor, tf_config
from tf_mgpu.config import DTYPES, INPUTS, SHARDS, STRATEGIES, Config
from tf_mgpu.engine import pace, stopping

_TASK = flags.DEFINE_string(
    "task",
    tasks.DEFAULT,
    f"What to train: a built-in task ({', '.join(tasks.BUILTIN)}), a path to a .py file, "
    f"a module (pkg.module) or pkg.module:attr. A task defines build_model(), returning a "
    f"compiled Keras model, and load_data(); see docs/tasks.md.",
)
_STRATEGY = flags.DEFINE_enum(
    "strategy",
    "mirrored",
    STRATEGIES,
    "mirrored: one replica per local GPU (or per logical CPU device), or per device of "
    "every worker when TF_CONFIG names several; multi_worker_mirrored: the workers of "
    "TF_CONFIG; one_device: the first GPU or the CPU; default: no distribution.",
)
_BATCH_SIZE = flags.DEFINE_integer(
    "batch_size",
    64,
    "Examples per replica per micro-batch. The global batch is this times the number of "
    "replicas in sync times --accumulation_steps, and is printed at start.",
    lower_bound=1,
)
_BATCH_WORKERS = flags.DEFINE_integer(
    "batch_workers",
    None,
    "The worker count --batch_size is per replica for: on another count of workers each "
    "replica takes batch_size x batch_workers / workers examples, so the global batch stays "
    "the same and a checkpoint resumes exactly (exit 3 if that is not whole). "
    "`tf_mgpu.launch --workers=MIN:MAX` passes MAX. Default: --batch_size on any count.",
    lower_bound=1,
)
_EPOCHS = flags.DEFINE_integer("epochs", 10, "Passes over the training split.", lower_bound=1)
_LEARNING_RATE = flags.DEFINE_float(
    "learning_rate",
    None,
    "Replaces the compiled optimizer's learning rate (mnist_mlp: SGD at 0.01), applied to "
    "the gradient of the mean loss over the global batch. Default: the compiled rate.",
)
_SEED = flags.DEFINE_integer(
    "seed", 0, "Seeds the initial weights and every epoch's data order.", lower_bound=0
)
_DATA_DIR = flags.DEFINE_string(
    "data_dir", None, "Where TFDS keeps prepared datasets; default: TFDS's own."
)
_MANUAL_DIR = flags.DEFINE_string(
    "manual_dir",
    None,
    "Folder holding the four original MNIST .gz files: TFDS prepares the data from them "
    "into --data_dir, once, with no network.",
)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir",
    "/tmp/tf_mgpu",
    "Where the chief writes checkpoints (in checkpoints/), summary.json, metrics.jsonl, "
    "flags.txt and model.weights.h5. A run into a folder that holds checkpoints of the same "
    "run resumes from the newest; one of another run is refused (see --clean).",
)
_CLEAN = flags.DEFINE_boolean(
    "clean",
    False,
    "Delete the checkpoints and outputs in --model_dir (only this program's files) and start over.",
)
_CHECKPOINT_STEPS = flags.DEFINE_integer(
    "checkpoint_steps",
    1000,
    "Save a checkpoint every this many training steps (rounded up to whole calls of "
    "--steps_per_loop), besides the one at every epoch's end; at most the steps since the "
    "last save are lost when a run dies.",
    lower_bound=1,
)
_LOG_STEPS = flags.DEFINE_integer(
    "log_steps",
    500,
    "The chief logs the training loss, examples/s and learning rate to TensorBoard "
    "(--model_dir/tensorboard) every this many steps, rounded up to whole calls of "
    "--steps_per_loop, and at every epoch's end, with the epoch's metrics.",
    lower_bound=1,
)
_TRAIN_SPLIT = flags.DEFINE_string(
    "train_split", "train", "TFDS split to train on, e.g. 'train[:10%]'."
)
_TEST_SPLIT = flags.DEFINE_string(
    "test_split", "test", "TFDS split to evaluate on after every epoch; every example counts."
)
_NUM_CPU_DEVICES = flags.DEFINE_integer(
    "num_cpu_devices",
    1,
    "Split the CPU into this many logical devices, so --strategy=mirrored runs that many "
    "replicas on a machine without GPUs.",
    lower_bound=1,
)
_CLUSTER_RESOLVER = flags.DEFINE_enum(
    "cluster_resolver",
    "tf_config",
    ("tf_config", "slurm", "kubernetes"),
    "Where the cluster comes from: tf_config reads TF_CONFIG (as a Kubeflow TFJob and "
    "`python -m tf_mgpu.launch` set it; none means one machine); slurm builds it from the "
    "Slurm job this task runs in (`srun python -m tf_mgpu.main --cluster_resolver=slurm`); "
    "kubernetes from this pod's index in an Indexed Job (JOB_COMPLETION_INDEX) and the "
    "TF_MGPU_WORKERS and TF_MGPU_SERVICE its manifest sets (docs/multi-worker.md).",
)
_SLURM_PORT_BASE = flags.DEFINE_integer(
    "slurm_port_base",
    8888,
    "With --cluster_resolver=slurm: task i of a node listens on this port + i; pick a "
    "range that is free on every node.",
    lower_bound=1024,
    upper_bound=65000,
)
_STARTUP_TIMEOUT = flags.DEFINE_float(
    "startup_timeout",
    300.0,
    "Seconds a multi-worker task waits for every other task of TF_CONFIG to start "
    "before it exits with an error (exit code 5), and then as long again for them to load "
    "their data, build the model and resume (exit code 6).",
    lower_bound=1.0,
)
_PEER_TIMEOUT = flags.DEFINE_float(
    "peer_timeout",
    60.0,
    "Multi-worker: seconds a task waits for progress, beyond twice the longest call or gap "
    "between calls it measured, before it gives up on a frozen or unreachable peer (exit "
    "code 6); compiling has no deadline, and what is not measured yet (the first calls) has "
    "--startup_timeout. TensorFlow's own "
    "heartbeats usually notice a dead peer within about 10 s.",
    lower_bound=1.0,
)
_STEPS_PER_LOOP = flags.DEFINE_string(
    "steps_per_loop",
    "auto",
    "Training steps per compiled call. auto: calls grow from one step until each takes "
    "about --loop_seconds, so the progress bar, batch callbacks, stops and the multi-worker "
    "liveness check follow seconds whatever the model's step time. A number N: the progress "
    "bar, TensorBoard, batch callbacks and --checkpoint_steps act every N steps, and a call "
    "that would take longer than about --loop_seconds is cut into several.",
)
_LOOP_SECONDS = flags.DEFINE_float(
    "loop_seconds",
    1.0,
    "The seconds one compiled call should take (see --steps_per_loop): a signal is acted "
    "on, and a multi-worker task reports progress, within about this long (or one step, "
    "if a step takes longer). Python's cost per call is about a millisecond.",
    lower_bound=0.01,
)
_CHECKPOINT_SECS = flags.DEFINE_float(
    "checkpoint_secs",
    600.0,
    "Also save a checkpoint when this many seconds passed since the last one (the chief's "
    "clock decides for every worker), so a slow model loses at most about this much work "
    "when a run dies. 0: only by --checkpoint_steps and at every epoch's end.",
    lower_bound=0.0,
)
_JIT_COMPILE = cli.define_auto_boolean(
    "jit_compile",
    "auto",
    "XLA: auto chooses per model and machine (on CPU: yes unless the model convolves), "
    "and the start line says why; true or false force it where the strategy allows: each "
    "whole call when a process has one replica, each replica's step on GPUs; nothing on "
    "several CPU devices or CPU workers.",
)
_INPUT = flags.DEFINE_enum(
    "input",
    "auto",
    INPUTS,
    "auto: resident where the arrays fit in half the devices' memory, else index (always "
    "index for np.memmap arrays); the start line says which and why. resident: each split "
    "held on every replica's device, each replica gathers its own examples; index: a tf.data "
    "pipeline per worker gathers its replicas' rows from the arrays in host memory (or the "
    "memmap's files), in the same order; stream: tf.data pipelines holding the arrays.",
)
_STREAM_SHARD = flags.DEFINE_enum(
    "stream_shard",
    "example",
    SHARDS,
    "How workers split a tf.data training split. example: each worker reads the whole "
    "shuffled epoch and keeps its share of every global batch, so N workers train exactly "
    "like one device. file: each worker reads only its own files of a dataset read from "
    "files (TFRecord shards; tf.data's FILE auto-shard), so the cluster reads the data once "
    "per epoch; the example order then differs from one device's.",
)
_DTYPE = flags.DEFINE_enum(
    "dtype",
    None,
    DTYPES,
    "Keras dtype policy: mixed_bfloat16 and mixed_float16 compute in 16 bits and keep "
    "float32 weights (mixed_float16 with dynamic loss scaling). Default: the policy the "
    "task file sets (keras.config.set_dtype_policy), else float32.",
)
_ACCUMULATION_STEPS = flags.DEFINE_integer(
    "accumulation_steps",
    1,
    "Micro-batches of --batch_size per optimizer step: a global batch this many times "
    "larger with the memory of one micro-batch, and one all-reduce per step.",
    lower_bound=1,
)
_SCALE_LR = flags.DEFINE_boolean(
    "scale_lr",
    False,
    "Linear scaling rule (Goyal et al. 2017): train at the learning rate x global batch / "
    "the task's reference batch (mnist_mlp: 64, the seed recipe's; otherwise --batch_size), "
    "after --warmup_epochs of linear warmup.",
)
_WARMUP_EPOCHS = flags.DEFINE_float(
    "warmup_epochs",
    0.0,
    "With --scale_lr: epochs over which the rate rises linearly from --learning_rate to "
    "the scaled rate.",
    lower_bound=0.0,
)
_VALIDATION_SPLIT = flags.DEFINE_float(
    "validation_split",
    0.0,
    "Hold out the last this fraction of the training split (before shuffling, as Keras's "
    "fit does) and report val_loss and val_<metric> every epoch. A task's load_data() "
    "may instead return (train, validation, test).",
    lower_bound=0.0,
    upper_bound=0.9,
)
_MEMORY_GROWTH = flags.DEFINE_boolean(
    "memory_growth",
    True,
    "GPUs allocate memory as training needs it, instead of nearly all of it at start.",
)
_COMPILE_CACHE = flags.DEFINE_string(
    "compile_cache",
    None,
    "Folder of XLA's persistent compilation cache: a second run of the same model, batch "
    "and dtype skips the compile. Default: tf_mgpu_cache in the TFDS data dir; 'none': off.",
)
flags.register_validator(
    "steps_per_loop",
    lambda value: _is_steps_per_loop(value),
    message="--steps_per_loop must be auto or a positive number of steps",
)
flags.register_validator(
    "learning_rate",
    lambda rate: rate is None or (math.isfinite(rate) and rate > 0),
    message="--learning_rate must be a positive finite number",
)
for _name in (
    "startup_timeout",
    "peer_timeout",
    "warmup_epochs",
    "loop_seconds",
    "checkpoint_secs",
):
    flags.register_validator(_name, math.isfinite, message=f"--{_name} must be a finite number")

_ALL_FLAGS = (
    _TASK,
    _STRATEGY,
    _BATCH_SIZE,
    _BATCH_WORKERS,
    _EPOCHS,
    _LEARNING_RATE,
    _SEED,
    _DATA_DIR,
    _MANUAL_DIR,
    _MODEL_DIR,
    _TRAIN_SPLIT,
    _TEST_SPLIT,
    _NUM_CPU_DEVICES,
    _STARTUP_TIMEOUT,
    _PEER_TIMEOUT,
    _CHECKPOINT_STEPS,
    _CHECKPOINT_SECS,
    _LOG_STEPS,
    _CLEAN,
    _STEPS_PER_LOOP,
    _LOOP_SECONDS,
    _JIT_COMPILE,
    _INPUT,
    _STREAM_SHARD,
    _DTYPE,
    _ACCUMULATION_STEPS,
    _SCALE_LR,
    _WARMUP_EPOCHS,
    _VALIDATION_SPLIT,
    _MEMORY_GROWTH,
    _COMPILE_CACHE,
)


def _is_steps_per_loop(value) -> bool:
    try:
        pace.parse(value)
    except ValueError:
        return False
    return True


def config_from_flags() -> Config:
    """Every flag above sets the Config field of the same name."""
    values = {holder.name: holder.value for holder in _ALL_FLAGS}
    values["steps_per_loop"] = pace.parse(values["steps_per_loop"])
    return Config(**values)


_PATH_FLAGS = {holder.name for holder in (_DATA_DIR, _MANUAL_DIR, _MODEL_DIR)}


def _replayable(holder, value):
    """A path flag made absolute, so flags.txt replays from any directory; a task file too."""
    if holder.name in _PATH_FLAGS or (holder is _TASK and tasks.is_file(value)):
        return os.path.abspath(value)
    return value


# Not part of the training recipe, but part of how the job ran.
_JOB_FLAGS = (_CLUSTER_RESOLVER, _SLURM_PORT_BASE)


def flagfile_text() -> str:
    """A flagfile that replays this run from any directory: `--flagfile=MODEL_DIR/flags.txt`."""
    lines = []
    for holder in (*_ALL_FLAGS, *_JOB_FLAGS):
        value = holder.value
        # --clean is an action on this run, not its recipe: replaying flags.txt to
        # resume must not delete the checkpoints it resumes from.
        if value is not None and holder is not _CLEAN:
            value = _replayable(holder, value)
            lines.append(f"--{holder.name}={value}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    config = config_from_flags()
    cli.quiet_tensorflow()
    cli.run(functools.partial(_run, config))


def _run(config: Config) -> None:
    clock = timing.Phases(since_process_start=True)
    if _CLUSTER_RESOLVER.value == "slurm" and not supervisor.is_child():
        # TF_CONFIG (and, on GPU nodes, CUDA_VISIBLE_DEVICES) for this process and the
        # trainer child it starts; neither reads a Slurm variable afterwards.
        os.environ.update(slurm.environment(port_base=_SLURM_PORT_BASE.value))
    if _CLUSTER_RESOLVER.value == "kubernetes" and not supervisor.is_child():
        os.environ["TF_CONFIG"] = kubernetes.tf_config()  # pure Python: no TensorFlow yet
    task = tf_config.task_from_env()
    api.check_before_tensorflow(config, task)  # a typo costs under a second
    if task.num_workers > 1 and not supervisor.is_child():
        code = supervisor.supervise(
            sys.argv,
            task=str(task),
            addresses=task.addresses,
            startup_timeout=config.startup_timeout,
            peer_timeout=config.peer_timeout,
        )
        cli.exit_now(code)
    supervisor.bind_to_parent()
    compile_cache.enable(config.compile_cache, config.data_dir)
    stop = stopping.Stop()
    stop.install()
    # TensorFlow loads here, after flags parse: --help and flag errors do not wait for it.
    from tf_mgpu import training

    clock.mark("import")
    splits_given = bool(_TRAIN_SPLIT.present or _TEST_SPLIT.present)
    training.run(
        config, flagfile=flagfile_text(), stop=stop, clock=clock, splits_given=splits_given
    )


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
