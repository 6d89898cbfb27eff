"""The fields of summary.json and of each metrics.jsonl line, each declared once with its meaning.

`tf_mgpu.outputs.summary` and the trainer's epoch record write them; docs/reference.md
is generated from these declarations (`python -m tf_mgpu.tools.reference`), and a test
checks that a real run writes exactly these keys, so a new field needs its line here.
A name `<split>_<metric>` stands for one key per compiled metric of the model, named
as Keras names the metric (`test_accuracy`). Nothing here imports TensorFlow.
"""

import dataclasses

from tf_mgpu import timing


@dataclasses.dataclass(frozen=True)
class Field:
    """What a field holds; `only`: when it is written, if not always."""

    meaning: str
    only: str | None = None


METRIC = "<metric>"
_NO_LOSS = "the model reports a loss (its own train_step or test_step may report none)"
_VALIDATION = "a validation split (--validation_split, or load_data() returning three)"

EPOCH = {
    "epoch": Field("The epoch's number, from 1."),
    "train_loss": Field("Mean training loss over the epoch's examples.", only=_NO_LOSS),
    f"train_{METRIC}": Field("Each compiled metric over the epoch's training examples."),
    "train_examples": Field("Training examples in the epoch, over every replica."),
    "examples_per_second": Field("Training examples per second of the epoch's compiled calls."),
    "seconds": Field("Seconds of the epoch's training calls (evaluation not included)."),
    "val_loss": Field("Loss over every validation example.", only=_VALIDATION),
    f"val_{METRIC}": Field("Each compiled metric over the validation split.", only=_VALIDATION),
    "val_examples": Field("Validation examples evaluated.", only=_VALIDATION),
    "test_loss": Field("Loss over every example of the test split.", only=_NO_LOSS),
    f"test_{METRIC}": Field("Each compiled metric over the test split."),
    "test_examples": Field("Test examples evaluated (every one: no partial batch is dropped)."),
}

_FINAL = "from the last epoch, or evaluated again when a callback set the weights at the end"

SUMMARY = {
    "strategy": Field("The --strategy value that builds the strategy the run used."),
    "task": Field("This process's task in the cluster, as TF_CONFIG names it: `worker:0`."),
    "num_workers": Field("Worker processes (tasks) in the cluster."),
    "replicas": Field("Replicas in sync: the devices that each train a share of a batch."),
    "devices": Field("The replicas' device names."),
    "per_replica_batch": Field(
        "--batch_size as set: examples per replica per micro-batch (with --batch_workers on "
        "another worker count, each replica takes global_batch / replicas / accumulation_steps)."
    ),
    "accumulation_steps": Field("Micro-batches per optimizer step."),
    "global_batch": Field("Examples per optimizer step, over every replica."),
    "steps_per_epoch": Field("Optimizer steps per epoch."),
    "steps_per_call": Field("Steps the last compiled training calls ran (--steps_per_loop)."),
    "learning_rate": Field("The rate trained at, or a schedule's peak; null where unknown."),
    "learning_rate_schedule": Field(
        "Keras's serialized schedule, or {callable: name}.",
        only="the rate is a schedule (--warmup_epochs, say) or a callable",
    ),
    "task_name": Field("The task trained: a built-in name, a file or a module."),
    "dtype": Field("The model's Keras dtype policy (the task may set its own)."),
    "xla": Field(
        "Where XLA compiled: `loop` (each whole call), `replica` (each replica's step) or `none`."
    ),
    "xla_reason": Field("Why XLA compiled there, as the start line says."),
    "config": Field("Every setting of the run, named as in the settings tables above."),
    "history": Field("Every epoch's record, as the lines of metrics.jsonl."),
    "val_loss": Field(f"Validation loss, {_FINAL}.", only=_VALIDATION),
    f"val_{METRIC}": Field(f"Each validation metric, {_FINAL}.", only=_VALIDATION),
    "val_examples": Field("Validation examples evaluated.", only=_VALIDATION),
    "test_loss": Field(f"Test loss, {_FINAL}.", only=_NO_LOSS),
    f"test_{METRIC}": Field(f"Each test metric, {_FINAL}."),
    "test_examples": Field("Test examples evaluated."),
    "train_seconds": Field("Seconds of training calls, summed over the epochs."),
    "examples_per_second": Field("Training examples per second over every epoch."),
    "steady_examples_per_second": Field(
        "Training examples per second without the first epoch, which also warms up (with one "
        "epoch: that epoch's)."
    ),
    "first_epoch_seconds": Field("Seconds of the first epoch's training calls."),
    "weights_sha256": Field("sha256 of the final weights' bytes: equal means bit-identical."),
    "versions": Field(
        "Python, tensorflow, keras, tensorflow_datasets and numpy versions the run used."
    ),
    "peak_host_memory_mib": Field("Peak resident memory of this process, MiB, at its end."),
    "peak_gpu_memory_mib": Field("Peak memory of each GPU, MiB, by device.", only="on GPUs"),
    "stopped_by": Field(
        "The Keras callback that stopped training early (EarlyStopping, say), or null.",
        only="the task has Keras callbacks",
    ),
    "checkpoint_seconds": Field("Seconds spent saving checkpoints during training."),
    "exports": Field(
        "Paths the export wrote (model.keras, saved_model); [] while it runs: a summary "
        "with [] is an export that never finished, and a rerun exports again."
    ),
    "seconds": Field(
        f"Where the wall time went, in seconds: {', '.join(timing.PHASES)}, other (no "
        f"phase) and total."
    ),
    "peak_host_memory_training_mib": Field(
        "Peak resident memory, MiB, at the end of training, before the export.",
        only="this process writes a --model_dir (the chief's: always in summary.json)",
    ),
}
