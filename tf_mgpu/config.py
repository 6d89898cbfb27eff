"""The run's settings as one frozen value, built once from flags by `tf_mgpu.main`.

Each setting is declared once, here: its default, its help and its bounds. `tf_mgpu.main`
makes its flags from these declarations (`tf_mgpu.cli.define_settings`), and
`tf_mgpu.train(**settings)` takes the same names. A Config checks itself against them
when made (`tf_mgpu.config_checks`), so a bad flag and a bad `tf_mgpu.train` argument
are refused by the same check, naming the setting.
"""

import dataclasses

from tf_mgpu import config_checks

STRATEGIES = ("mirrored", "multi_worker_mirrored", "one_device", "default")
INPUTS = ("auto", "resident", "index", "stream")
SHARDS = ("example", "file")
DTYPES = ("float32", "mixed_bfloat16", "mixed_float16", "float64")
# Keras's other float policies: taken as a task file (or tf_mgpu.train) sets them, not a flag.
KERAS_FLOATS = ("bfloat16", "float16")


# The settings' groups, in the order docs/reference.md lists them: each setting names its own.
GROUPS = {
    "model": "What to train",
    "cluster": "Strategy and cluster",
    "batch": "Batch and learning rate",
    "data": "Data and input",
    "checkpoints": "Checkpoints and resume",
    "outputs": "Outputs",
    "speed": "Speed and precision",
}


def setting(
    default, help_text: str, *, group: str, choices=None, lower=None, upper=None, **command
):
    """A Config field with what its flag needs: help, choices, bounds (`positive=True`: a
    float above 0; a float is always finite); `parse` and `takes` for a setting given as
    text that is not a plain type (a function returning the value or raising ValueError, and
    what it takes); `command_default` where the command's default differs from the
    library's (main writes to a model dir, `tf_mgpu.train` writes nothing unless asked).
    `tf_mgpu.config_checks` checks a value against all of it. `group`, one of GROUPS, is
    the section of docs/reference.md that lists it."""
    if group not in GROUPS:
        raise ValueError(f"group={group!r} is not one of {', '.join(GROUPS)}")
    metadata = {"help": help_text, "choices": choices, "lower": lower, "upper": upper}
    return dataclasses.field(default=default, metadata={**metadata, "group": group, **command})


@dataclasses.dataclass(frozen=True)
class Config:
    """Hyperparameters and paths of one training run.

    Values that depend on the runtime (replica count, global batch, steps per
    epoch) are not stored here: `tf_mgpu.training.run` derives them once the
    strategy exists.
    """

    task: str = setting(
        "mnist_mlp",
        "What to train: a built-in task ({builtin}), a path to a .py file, a module "
        "(pkg.module) or pkg.module:attr. A task defines build_model(), returning a compiled "
        "Keras model, and load_data(); see docs/tasks.md.",
        group="model",
    )
    strategy: str = setting(
        "mirrored",
        "mirrored: one replica per local GPU (or per logical CPU device), or per device of "
        "every worker when TF_CONFIG names several; multi_worker_mirrored: the workers of "
        "TF_CONFIG; one_device: the first GPU or the CPU; default: no distribution.",
        choices=STRATEGIES,
        group="cluster",
    )
    batch_size: int = setting(
        64,
        "Examples per replica per micro-batch. The global batch is this times the number of "
        "replicas in sync times --accumulation_steps, and is printed at start.",
        lower=1,
        group="batch",
    )
    batch_workers: int | None = setting(
        None,
        "The worker count --batch_size is per replica for: on another count of workers each "
        "replica takes batch_size x batch_workers / workers examples, so the global batch stays "
        "the same and a checkpoint resumes exactly (exit 3 if that is not whole). "
        "`tf_mgpu.launch --workers=MIN:MAX` passes MAX. Default: --batch_size on any count.",
        lower=1,
        group="batch",
    )
    epochs: int = setting(
        10,
        "Passes over the training split.",
        lower=1,
        group="model",
    )
    learning_rate: float | None = setting(
        None,
        "Replaces the compiled optimizer's learning rate (mnist_mlp: SGD at 0.01), applied to "
        "the gradient of the mean loss over the global batch. Default: the compiled rate.",
        positive=True,
        group="batch",
    )
    seed: int = setting(
        0,
        "Seeds the initial weights and every epoch's data order.",
        lower=0,
        group="model",
    )
    data_dir: str | None = setting(
        None,
        "Where TFDS keeps prepared datasets; default: TFDS's own.",
        group="data",
    )
    manual_dir: str | None = setting(
        None,
        "Folder holding the four original MNIST .gz files: TFDS prepares the data from them "
        "into --data_dir, once, with no network.",
        group="data",
    )
    model_dir: str | None = setting(
        None,
        "Where the chief writes checkpoints (in checkpoints/), summary.json, metrics.jsonl, "
        "flags.txt and model.weights.h5. A run into a folder that holds checkpoints of the same "
        "run resumes from the newest; one of another run is refused (see --clean).",
        command_default="/tmp/tf_mgpu",
        group="outputs",
    )
    train_split: str = setting(
        "train",
        "TFDS split to train on, e.g. 'train[:10%]'.",
        group="data",
    )
    test_split: str = setting(
        "test",
        "TFDS split to evaluate on after every epoch; every example counts.",
        group="data",
    )
    validation_split: float = setting(
        0.0,
        "Hold out the last this fraction of the training split (before shuffling, as Keras's "
        "fit does) and report val_loss and val_<metric> every epoch. A task's load_data() may "
        "instead return (train, validation, test).",
        lower=0.0,
        upper=0.9,
        group="data",
    )
    num_cpu_devices: int = setting(
        1,
        "Split the CPU into this many logical devices, so --strategy=mirrored runs that many "
        "replicas on a machine without GPUs.",
        lower=1,
        group="cluster",
    )
    startup_timeout: float = setting(
        300.0,
        "Seconds a multi-worker task waits for every other task of TF_CONFIG to start before it "
        "exits with an error (exit code 5), and then as long again for them to load their data, "
        "build the model and resume (exit code 6).",
        lower=1.0,
        group="cluster",
    )
    peer_timeout: float = setting(
        60.0,
        "Multi-worker: seconds a task waits for progress, beyond twice the longest call or gap "
        "between calls it measured, before it gives up on a frozen or unreachable peer (exit "
        "code 6); compiling has no deadline, and what is not measured yet (the first calls) has "
        "--startup_timeout. TensorFlow's own heartbeats usually notice a dead peer within about "
        "10 s.",
        lower=1.0,
        group="cluster",
    )
    checkpoint_steps: int = setting(
        1000,
        "Save a checkpoint every this many training steps (rounded up to whole calls of "
        "--steps_per_loop), besides the one at every epoch's end; at most the steps since the "
        "last save are lost when a run dies.",
        lower=1,
        group="checkpoints",
    )
    checkpoint_secs: float = setting(
        600.0,
        "Also save a checkpoint when this many seconds passed since the last one (the chief's "
        "clock decides for every worker), so a slow model loses at most about this much work "
        "when a run dies. 0: only by --checkpoint_steps and at every epoch's end.",
        lower=0.0,
        group="checkpoints",
    )
    log_steps: int = setting(
        500,
        "The chief logs the training loss, examples/s and learning rate to TensorBoard "
        "(--model_dir/tensorboard) every this many steps, rounded up to whole calls of "
        "--steps_per_loop, and at every epoch's end, with the epoch's metrics.",
        lower=1,
        group="outputs",
    )
    clean: bool = setting(
        False,
        "Delete the checkpoints and outputs in --model_dir (only this program's files) and "
        "start over.",
        group="checkpoints",
    )
    steps_per_loop: int | str = setting(
        "auto",
        "Training steps per compiled call. auto: calls grow from one step until each takes "
        "about --loop_seconds, so the progress bar, batch callbacks, stops and the multi-worker "
        "liveness check follow seconds whatever the model's step time. A number N: the progress "
        "bar, TensorBoard, batch callbacks and --checkpoint_steps act every N steps, and a call "
        "that would take longer than about --loop_seconds is cut into several.",
        parse=config_checks.parse_steps_per_loop,
        takes="auto or a positive integer",
        group="speed",
    )
    loop_seconds: float = setting(
        1.0,
        "The seconds one compiled call should take (see --steps_per_loop): a signal is acted "
        "on, and a multi-worker task reports progress, within about this long (or one step, if "
        "a step takes longer). Python's cost per call is about a millisecond.",
        lower=0.01,
        group="speed",
    )
    jit_compile: bool | str = setting(
        "auto",
        "XLA: auto chooses per model and machine (on CPU: yes unless the model convolves), and "
        "the start line says why; true or false force it where the strategy allows: each whole "
        "call when a process has one replica, each replica's step on GPUs; nothing on several "
        "CPU devices or CPU workers.",
        parse=config_checks.parse_jit_compile,
        takes="auto, true or false",
        group="speed",
    )
    input: str = setting(
        "auto",
        "auto: resident where the arrays fit in half the devices' memory, else index (always "
        "index for np.memmap arrays); the start line says which and why. resident: each split "
        "held on every replica's device, each replica gathers its own examples; index: a "
        "tf.data pipeline per worker gathers its replicas' rows from the arrays in host memory "
        "(or the memmap's files), in the same order; stream: tf.data pipelines holding the "
        "arrays.",
        choices=INPUTS,
        group="data",
    )
    stream_shard: str = setting(
        "example",
        "How workers split a tf.data training split. example: each worker reads the whole "
        "shuffled epoch and keeps its share of every global batch, so N workers train exactly "
        "like one device. file: each worker reads only its own files of a dataset read from "
        "files (TFRecord shards; tf.data's FILE auto-shard), so the cluster reads the data once "
        "per epoch; the example order then differs from one device's.",
        choices=SHARDS,
        group="data",
    )
    dtype: str | None = setting(
        None,
        "Keras dtype policy: mixed_bfloat16 and mixed_float16 compute in 16 bits and keep "
        "float32 weights (mixed_float16 with dynamic loss scaling). Default: the policy the "
        "task file sets (keras.config.set_dtype_policy), else float32.",
        choices=DTYPES,
        also=KERAS_FLOATS,
        group="speed",
    )
    accumulation_steps: int = setting(
        1,
        "Micro-batches of --batch_size per optimizer step: a global batch this many times "
        "larger with the memory of one micro-batch, and one all-reduce per step.",
        lower=1,
        group="batch",
    )
    sync_batch_norm: bool = setting(
        False,
        "Every BatchNormalization layer normalises with the statistics of the global batch "
        "(Keras's synchronized=True: one all-reduce of its mean and variance per layer and "
        "step), so N replicas train as one device; off, each replica uses its own share's, as "
        "Keras's fit does. The export keeps each layer as the task built it.",
        group="batch",
    )
    scale_lr: bool = setting(
        False,
        "Linear scaling rule (Goyal et al. 2017): train at the learning rate x global batch / "
        "the task's reference batch (mnist_mlp: 64, the seed recipe's; otherwise --batch_size), "
        "after --warmup_epochs of linear warmup.",
        group="batch",
    )
    warmup_epochs: float = setting(
        0.0,
        "With --scale_lr: epochs over which the rate rises linearly from --learning_rate to the "
        "scaled rate.",
        lower=0.0,
        group="batch",
    )
    memory_growth: bool = setting(
        True,
        "GPUs allocate memory as training needs it, instead of nearly all of it at start.",
        group="speed",
    )
    compile_cache: str | None = setting(
        None,
        "Folder of XLA's persistent compilation cache: a second run of the same model, batch "
        "and dtype skips the compile. Default: tf_mgpu_cache in the TFDS data dir; 'none': off.",
        group="speed",
    )

    def __post_init__(self):
        """Every setting checked against its declaration (SettingError names the first one
        that does not fit) and held as its type: steps_per_loop 8, not "8"."""
        for field in dataclasses.fields(self):
            value = config_checks.checked(field, getattr(self, field.name))
            object.__setattr__(self, field.name, value)
