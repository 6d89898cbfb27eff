"""The run's settings as one frozen value, built once from flags by `tf_mgpu.main`."""

import dataclasses

STRATEGIES = ("mirrored", "multi_worker_mirrored", "one_device", "default")
INPUTS = ("auto", "resident", "index", "stream")
SHARDS = ("example", "file")
DTYPES = ("float32", "mixed_bfloat16", "mixed_float16", "float64")


@dataclasses.dataclass(frozen=True)
class Config:
    """Hyperparameters and paths of one training run.

    Values that depend on the runtime (replica count, global batch, steps per
    epoch) are not stored here: `tf_mgpu.training.run` derives them once the
    strategy exists.
    """

    task: str = "mnist_mlp"  # a built-in name, a .py file, pkg.module or pkg.module:attr
    strategy: str = "mirrored"
    # Per replica and micro-batch; global batch = batch_size * replicas * accumulation_steps.
    batch_size: int = 64
    # None, or the worker count batch_size is stated for: on another count, each replica
    # takes the share of the same global batch (see tf_mgpu.cluster.elastic).
    batch_workers: int | None = None
    epochs: int = 10
    learning_rate: float | None = None  # None: the compiled optimizer's rate
    seed: int = 0
    data_dir: str | None = None  # None: TFDS's default data dir
    manual_dir: str | None = None  # folder holding the four MNIST .gz files
    model_dir: str | None = None  # None: write nothing
    train_split: str = "train"
    test_split: str = "test"
    # The last this fraction of the training arrays, held out for validation as Keras's
    # fit(validation_split=...) does; 0: none (or load_data's own validation split).
    validation_split: float = 0.0
    num_cpu_devices: int = 1
    startup_timeout: float = 300.0  # seconds a worker waits for its peers
    # Seconds a worker waits for progress once training, beyond twice the longest call
    # measured (see tf_mgpu.engine.liveness).
    peer_timeout: float = 60.0
    # Checkpoints, in model_dir/checkpoints: every this many steps (rounded up to
    # whole calls), every checkpoint_secs seconds (0: never by time) and at every
    # epoch's end.
    checkpoint_steps: int = 1000
    checkpoint_secs: float = 600.0
    # TensorBoard's training curve: every this many steps, rounded up to whole calls.
    log_steps: int = 500
    clean: bool = False  # delete model_dir's checkpoints and outputs and start over
    # Speed: defaults are the fast path (see tf_mgpu.engine.loop); each can be turned off.
    # Training steps per compiled call: "auto" sizes calls to take about loop_seconds;
    # a number caps them and sets the cadence of what runs between calls (tf_mgpu.engine.pace).
    steps_per_loop: int | str = "auto"
    loop_seconds: float = 1.0
    # XLA: True or False where the strategy allows it, or "auto": per model and machine
    # (see tf_mgpu.engine.jit).
    jit_compile: bool | str = "auto"
    # auto: resident where the arrays fit on the devices, else index (see
    # tf_mgpu.engine.placement); resident, index (read from host memory) or stream (tf.data).
    input: str = "auto"
    # How workers split a tf.data training split (SHARDS): "example" (each worker keeps its
    # share of every global batch, as one device trains) or "file" (each reads its own files).
    stream_shard: str = "example"
    # A Keras dtype policy (DTYPES; float64 for exact comparisons), or None: the policy
    # the task file sets at import (float32 if it sets none).
    dtype: str | None = None
    # Batch and memory.
    accumulation_steps: int = 1  # micro-batches per optimizer step
    scale_lr: bool = False  # linear scaling rule: lr x global batch / the task's reference batch
    warmup_epochs: float = 0.0  # with scale_lr: ramp from learning_rate to the scaled rate
    memory_growth: bool = True  # GPUs take memory as needed instead of all at start
    # XLA's persistent compilation cache: None beside the data (see tf_mgpu.compile_cache),
    # "none" off.
    compile_cache: str | None = None


def parse_jit_compile(value) -> bool | str:
    """--jit_compile's value: True, False or "auto"; ValueError for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text in ("true", "t", "1", "yes"):
        return True
    if text in ("false", "f", "0", "no"):
        return False
    raise ValueError(f"{value!r} is not one of auto, true, false")
