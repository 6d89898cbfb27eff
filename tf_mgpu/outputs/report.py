"""What a run prints, and the files its chief leaves in --model_dir."""

import importlib.metadata
import json
import os
import platform
import resource
import shutil

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu import strict_json
from tf_mgpu.cluster import startup_checks
from tf_mgpu.config import Config
from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.input import stream
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.outputs import export, flagfile, tensorboard

SUMMARY = "summary.json"
METRICS = "metrics.jsonl"
FLAGS = flagfile.NAME
WEIGHTS = "model.weights.h5"


def start_line(
    strategy: tf.distribute.Strategy,
    task: str,
    config: Config,
    global_batch: int,
    model: str = "mnist_mlp",
    xla: str = "",
    inputs: str = "",
    accumulation_from_optimizer: bool = False,
) -> str:
    """The run's first line; `inputs` says how the data is served and why (default:
    config.input). `accumulation_from_optimizer`: the accumulation steps are the
    optimizer's gradient_accumulation_steps, which tf_mgpu runs itself."""
    replicas = strategy.num_replicas_in_sync
    devices = ",".join(strategies.devices_of(strategy))
    accumulation = (
        f" x {config.accumulation_steps} accumulation steps"
        + (" (the optimizer's gradient_accumulation_steps)" if accumulation_from_optimizer else "")
        if config.accumulation_steps > 1
        else ""
    )
    return (
        f"tf_mgpu start: strategy={strategies.name_of(strategy)} task={task} replicas={replicas} "
        f"devices={devices} batch_size={config.batch_size}/replica{accumulation} "
        f"global_batch={global_batch} input={inputs or config.input} "
        f"steps_per_loop={config.steps_per_loop} loop_seconds={config.loop_seconds:g} "
        f"model={model}" + (f" {xla}" if xla else "")
    )


def input_lines(
    datasets, stream_shard: str, multi_worker: bool, *, global_batch: int, eval_batch: int
) -> list[str]:
    """What the chief says of the input at start: tf.data splits the user batched, read as
    their examples at `global_batch` (evaluated at `eval_batch`); a tf.data split of unknown
    length read once to count it; and workers reading their own files."""
    lines = []
    batched = batched_line(datasets, global_batch, eval_batch)
    if batched:
        lines.append(batched)
    for split in (datasets.train, datasets.validation, datasets.test):
        if isinstance(split, stream.Stream) and not split.checked_as_read:  # scanned
            where = " before .batch()" if split.batched else ""
            lines.append(
                f"tf_mgpu data: read the {split.name} dataset once before training to count "
                f"its {len(split):,} examples (its length is unknown); declare it with "
                f"dataset.apply(tf.data.experimental.assert_cardinality({len(split)})){where} "
                f"to start without that pass"
            )
    if stream_shard == "file" and multi_worker:
        lines.append(
            "tf_mgpu input: each worker reads only its own files of the training dataset "
            "(--stream_shard=file): the cluster reads the data once per epoch, and the "
            "example order differs from one device's"
        )
    return lines


def batched_line(datasets, global_batch: int, eval_batch: int) -> str | None:
    """'tf_mgpu data: the training dataset is batched (by 32); it is unbatched and read at
    the global batch of 64', naming every tf.data split the user batched; None if none."""
    named = [
        (name, split.batched)
        for name, split in (
            ("training", datasets.train),
            ("validation", datasets.validation),
            ("test", datasets.test),
        )
        if isinstance(split, stream.Stream) and split.batched
    ]
    if not named:
        return None
    names = _listed([name for name, _ in named])
    ways = list(dict.fromkeys(batched.describe() for _, batched in named))
    how = ways[0] if len(ways) == 1 else _listed([b.describe() for _, b in named])
    one = len(named) == 1
    evaluated = {name for name, _ in named} - {"training"}
    at = f"the global batch of {global_batch}"
    if evaluated and eval_batch != global_batch:
        at = f"the global batch of {global_batch} (evaluated at {eval_batch})"
    return (
        f"tf_mgpu data: the {names} dataset{'' if one else 's'} "
        f"{'is' if one else 'are'} batched ({how}); {'it is' if one else 'they are'} "
        f"unbatched and read at {at}"
    )


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def epoch_line(record: dict, epochs: int) -> str:
    width = len(str(epochs))
    parts = [values(record, split, loss_first=True) for split in ("train", "val", "test")]
    return (
        f"epoch {record['epoch']:{width}d}/{epochs}"
        + "".join(f"  {part}" for part in parts if part)
        + f"  {record['examples_per_second']:,.0f} ex/s  {record['seconds']:.1f} s"
    )


def final_line(summary: dict) -> str:
    test = values(summary, "test", loss_first=False) or "no test split evaluated"
    return (
        f"tf_mgpu done: {test}"
        f"  {summary['examples_per_second']:,.0f} ex/s over {summary['train_seconds']:.1f} s"
        f"  peak host memory {summary['peak_host_memory_mib']:,.0f} MiB"
    )


def values(record: dict, split: str, *, loss_first: bool) -> str:
    """`train_loss 0.3000  train_acc 0.9000 ...`: the loss and every metric of `split`.

    'accuracy' shows as 'acc'; the loss comes first or last.
    """
    names = [
        key[len(split) + 1 :]
        for key in record
        if key.startswith(f"{split}_") and key not in (f"{split}_loss", f"{split}_examples")
    ]
    shown = [(name, record[f"{split}_{name}"]) for name in names]
    # A model's own train_step may report no loss (a GAN's d_loss and g_loss).
    loss = [("loss", record[f"{split}_loss"])] if f"{split}_loss" in record else []
    pairs = loss + shown if loss_first else shown + loss
    return "  ".join(
        f"{split}_{'acc' if name == 'accuracy' else name} {value:.4f}" for name, value in pairs
    )


def weights_line(digest: str, workers: int = 1) -> str:
    """The chief's last line: equal digests mean bit-identical weights."""
    where = f" (identical on all {workers} workers)" if workers > 1 else ""
    return f"tf_mgpu weights: sha256={digest}{where}"


def versions() -> dict:
    """What a rerun needs to match: Python and the libraries that compute."""
    try:  # from its metadata: importing TFDS costs 0.4 s, and most runs no longer need it
        tfds_version = importlib.metadata.version("tensorflow-datasets")
    except importlib.metadata.PackageNotFoundError:
        tfds_version = "not installed"
    return {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "tensorflow_datasets": tfds_version,
        "numpy": np.__version__,
    }


def memory_use() -> dict:
    """Peak memory of this process, and of each GPU where TensorFlow reports it."""
    usage = {"peak_host_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        usage["peak_gpu_memory_mib"] = {
            gpu.name: tf.config.experimental.get_memory_info(gpu.name)["peak"] / 2**20
            for gpu in gpus
        }
    return usage


def dropped_line(dropped: int, examples: int, global_batch: int) -> str:
    """The warning for a global batch that leaves much of each epoch unused."""
    return (
        f"tf_mgpu: warning: a global batch of {global_batch} leaves {dropped:,} of the "
        f"{examples:,} training examples ({dropped / examples:.0%}) out of every epoch "
        f"(each epoch drops its last partial batch); lower --batch_size to use them"
    )


class Outputs:
    """The chief's files in `model_dir`; built with `model_dir=None` it writes nothing.

    `flags.txt` is written when training starts, `metrics.jsonl` gains a line
    per epoch, and `model.weights.h5` and `summary.json` are written at the end.
    Each file is written whole under another name and renamed into place, so
    none is ever half-written. A resumed run keeps the epochs its checkpoint
    holds and drops any later line, so no epoch appears twice or is missing.
    Every value is strict JSON (no NaN). The fields of both JSON files are declared in
    `tf_mgpu.outputs.fields`.
    """

    def __init__(self, model_dir: str | None):
        self.model_dir = model_dir

    def check(self) -> None:
        """Creates `model_dir` and checks it is writable, before any work starts."""
        startup_checks.model_dir(self.model_dir)

    def has_outputs(self) -> bool:
        return self.model_dir is not None and any(
            os.path.exists(self._path(name))
            for name in (SUMMARY, METRICS, WEIGHTS, export.KERAS, export.SAVED_MODEL)
        )

    def clean(self) -> None:
        """Deletes this program's files (and only those) from `model_dir`: `--clean`."""
        if self.model_dir is None:
            return
        shutil.rmtree(self._path(checkpoint.DIRECTORY), ignore_errors=True)
        shutil.rmtree(self._path(tensorboard.DIRECTORY), ignore_errors=True)
        export.remove(self.model_dir)
        for name in (SUMMARY, METRICS, FLAGS, WEIGHTS):
            for path in (self._path(name), self._path(name) + ".partial"):
                if os.path.exists(path):
                    os.remove(path)

    def begin(self, flagfile: str | None) -> None:
        """Starts a new run's metrics log and records the flags that replay it."""
        if self.model_dir is None:
            return
        _write(self._path(METRICS), "")
        if flagfile is not None:
            _write(self._path(FLAGS), flagfile)

    def resume(self, epochs_done: int, flagfile: str | None) -> list[dict]:
        """Keeps the metrics of the first `epochs_done` epochs and returns them."""
        if self.model_dir is None:
            return []
        kept = []
        if os.path.exists(self._path(METRICS)):
            with open(self._path(METRICS)) as log:
                records = [json.loads(line) for line in log if line.strip()]
            kept = [r for r in records if r["epoch"] <= epochs_done]
        _write(self._path(METRICS), "".join(_json_line(r) for r in kept))
        if flagfile is not None:
            _write(self._path(FLAGS), flagfile)
        return kept

    def epoch(self, record: dict) -> None:
        if self.model_dir is not None:
            with open(self._path(METRICS), "a") as log:
                log.write(_json_line(record))

    def weights(self, model: keras.Model) -> None:
        """Writes the weights, renamed into place when complete (as `summary` is)."""
        if self.model_dir is None:
            return
        # Keras insists that a weights file's name ends in .weights.h5.
        partial_weights = self._path("partial." + WEIGHTS)
        # Every weight of the model, as Keras's own save_weights writes them (the pair of
        # model.keras), not a class's override of it (keras.io's zero_dce saves a part, with
        # Keras 2's arguments, which Keras 3 refuses).
        keras.Model.save_weights(model, partial_weights)
        os.replace(partial_weights, self._path(WEIGHTS))

    def summary(self, summary: dict) -> None:
        if self.model_dir is not None:
            _write(self._path(SUMMARY), strict_json.dumps(summary, indent=2) + "\n")

    def export_unfinished(self) -> bool:
        """Whether the summary says the export started and never finished: `exports` is
        written empty before exporting and lists what was written after."""
        if self.model_dir is None or not os.path.exists(self._path(SUMMARY)):
            return False
        with open(self._path(SUMMARY)) as f:
            exports = json.load(f).get("exports")
        return exports is not None and not (exports and all(map(os.path.exists, exports)))

    def exported(self, paths: list[str]) -> None:
        """Records in the summary what the export wrote."""
        with open(self._path(SUMMARY)) as f:
            recorded = json.load(f)
        self.summary({**recorded, "exports": paths})

    def _path(self, name: str) -> str:
        return os.path.join(self.model_dir, name)


def _json_line(record: dict) -> str:
    return strict_json.dumps(record) + "\n"


def _write(path: str, text: str) -> None:
    partial = path + ".partial"
    with open(partial, "w") as f:
        f.write(text)
    os.replace(partial, path)
