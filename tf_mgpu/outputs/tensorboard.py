"""TensorBoard: the chief's curves, hyperparameters and final metrics, in --model_dir/tensorboard.

    tensorboard --logdir=MODEL_DIR/tensorboard

Laid out like Keras's TensorBoard callback, so the dashboards look as users
expect: runs `train` and `test` whose `epoch_loss` and `epoch_<metric>` (one
per compiled metric: `epoch_accuracy`, ...) overlay in one chart, and the
HParams plugin's session at the top, whose
metrics are those curves' last values. The `train` run also has `loss` (the
mean over the steps since its last point), `examples_per_second` (over the
whole cluster) and `learning_rate`, every `--log_steps` steps rounded up to
whole calls of `--steps_per_loop` (as Orbit does), and at every epoch's end.
Every scalar's step is the optimizer step, so curves of different global
batches share an axis of updates, and a resumed run continues them.

A run killed after writing points past its last checkpoint would repeat
those steps when resumed; `Summaries.resume` first rewrites the event files
without them, so every curve has each step once.
"""

import dataclasses
import glob
import os

import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

DIRECTORY = "tensorboard"
RUNS = ("train", "test")
# An epoch record's key prefix -> its TensorBoard run; "validation" as Keras's callback names it.
_RUN_OF = {"train": "train", "val": "validation", "test": "test"}


def _hparams_metrics(names) -> list:
    """What the HParams dashboard shows for each session: the last value of these."""
    return [
        hp.Metric("epoch_" + name, group=run, display_name=f"{run} {name}")
        for run in ("test", "train")
        for name in (*names, "loss")
    ]


class Summaries:
    """The chief's TensorBoard writers; built with `model_dir=None` it writes nothing."""

    def __init__(self, model_dir: str | None):
        self.directory = None if model_dir is None else os.path.join(model_dir, DIRECTORY)
        self._writers: dict[str, tf.summary.SummaryWriter] = {}

    def begin(self, hparams: dict, metrics=("accuracy",)) -> None:
        """A new run: its hyperparameters and the names of its compiled metrics, for the
        HParams dashboard."""
        if self.directory is None:
            return
        with self._writer("").as_default():
            hp.hparams_config(
                hparams=[hp.HParam(name) for name in sorted(hparams)],
                metrics=_hparams_metrics(metrics),
            )
            hp.hparams(hparams)
        self.flush()

    def resume(self, step: int) -> None:
        """A resumed run: drops every point after `step`, the checkpoint it resumes from."""
        if self.directory is None:
            return
        for path in sorted(glob.glob(os.path.join(self.directory, "**", "*tfevents*"))):
            truncate(path, step)

    def training(self, step: int, loss: float, examples_per_second: float, rate: float) -> None:
        if self.directory is None:
            return
        with self._writer("train").as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("examples_per_second", examples_per_second)
            tf.summary.scalar("learning_rate", rate)

    def epoch(self, step: int, record: dict) -> None:
        """An epoch's train and test loss and every metric, at the step that ended it."""
        if self.directory is None:
            return
        for prefix, run in _RUN_OF.items():
            scalars = {
                key[len(prefix) + 1 :]: value
                for key, value in record.items()
                if key.startswith(f"{prefix}_") and key != f"{prefix}_examples"
            }
            if not scalars:
                continue
            with self._writer(run).as_default(step=step):
                for name, value in scalars.items():
                    tf.summary.scalar(f"epoch_{name}", value)
        self.flush()

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def _writer(self, run: str) -> tf.summary.SummaryWriter:
        if run not in self._writers:
            self._writers[run] = tf.summary.create_file_writer(os.path.join(self.directory, run))
        return self._writers[run]


def truncate(path: str, step: int) -> None:
    """Rewrites an event file without the summaries of steps after `step`."""
    # As tf.compat.v1.train.summary_iterator reads them, without its deprecation warning.
    events = [tf.compat.v1.Event.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]
    kept = [e for e in events if not e.HasField("summary") or e.step <= step]
    if len(kept) == len(events):
        return
    partial = os.path.join(os.path.dirname(path), "partial.rewrite")  # not a *tfevents* name
    with tf.io.TFRecordWriter(partial) as writer:
        for event in kept:
            writer.write(event.SerializeToString())
    os.replace(partial, path)


@dataclasses.dataclass
class Interval:
    """The training loss and speed since the last point, from an epoch's running sums.

    `update` takes the epoch's summed loss and examples after each call (they
    restart at zero with each epoch) and the seconds spent in calls so far.
    """

    loss: float = 0.0
    examples: float = 0.0
    seconds: float = 0.0
    _epoch_loss: float = 0.0
    _epoch_examples: float = 0.0

    def start_epoch(self, loss: float = 0.0, examples: float = 0.0) -> None:
        """The sums an epoch starts from: zero, or a resumed epoch's restored sums."""
        self._epoch_loss, self._epoch_examples = loss, examples

    def update(self, loss: float, examples: float, seconds: float) -> None:
        self.loss += loss - self._epoch_loss
        self.examples += examples - self._epoch_examples
        self.seconds += seconds
        self._epoch_loss, self._epoch_examples = loss, examples

    def take(self) -> tuple[float, float]:
        """(mean loss, examples per second) since the last `take`, then starts a new interval."""
        mean = self.loss / self.examples if self.examples else float("nan")
        speed = self.examples / self.seconds if self.seconds else 0.0
        self.loss = self.examples = self.seconds = 0.0
        return mean, speed
