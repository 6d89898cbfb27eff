"""The loss and the compiled metrics of one split, measured by the model's own Keras objects
and read as totals over every replica and worker.

The model's compiled metrics (compile's `metrics` and `weighted_metrics`, and each
output's loss of a model with several) measure, as under `fit`: the step calls
`model.compute_metrics`. Their state variables sync on read, so a read sums every
replica's: exact for Keras's own metrics, whose states are counts and totals. A
state that is not a sum (a user's `Metric` that keeps a largest value, say) is not
exact summed; with several replicas such a model's metrics are updated on every
replica with the whole global batch (`all_gather`, padding dropped) and read on
one replica, so each reports what it reports on one device.

The loss is the engine's: each replica adds its share's mean loss times its
examples, in float64, so the mean over any number of replicas and workers is the
mean Keras's loss tracker would give, summed exactly.
"""

import keras
import tensorflow as tf

from tf_mgpu import internals
from tf_mgpu.engine.model.compiled import overrides
from tf_mgpu.engine.model.step_logs import StepLogs


class ModelMetrics:
    """The loss and the model's compiled metrics over one split (`name`: train, val, test).

    Create it in `strategy.scope()`, after the model's metrics were built (a first
    `compute_metrics`). The step methods (`add`, `measure`, `count`) run on each
    replica; `reset`, `result` and `totals` outside them, on every worker at once
    (a read is collective under MultiWorkerMirroredStrategy).

    Training, validation and evaluation share the model's metrics, as in Keras. The
    training split `keeps` a copy of their state after every step, which its
    checkpoint holds and `restored` copies back, so an evaluation in between (a
    stop while evaluating) does not change the epoch's training figures.

    `own_loss`: the model's own `train_step` or `test_step` reports the loss (its
    loss tracker); the engine only counts the examples, and `logs` (a `StepLogs`, set
    before the step is traced) keeps what the step returns, which `result` shows where
    its keys are not the metrics' (as Keras's fit and evaluate show it).

    Keras weights its updates of each output's loss (which `compute_loss` updates) by the
    share's static size: every step hands it shares of real examples only (an
    evaluation's padded last step cuts each share to its examples, see
    `tf_mgpu.engine.step.replica_steps`), so they are exact means.
    """

    def __init__(
        self,
        model: keras.Model,
        name: str,
        *,
        keeps: bool = False,
        own_loss: bool = False,
    ):
        self._model = model
        self._own_loss = own_loss
        self.logs: StepLogs | None = None
        self._strategy = tf.distribute.get_strategy()
        self._loss, self._count = _sum(f"{name}_loss"), _sum(f"{name}_count")
        # Was the real and padding examples measured; kept, always equal to the count, so
        # that checkpoints keep their layout (`variables`).
        self._padded = _sum(f"{name}_padded")
        self.gathered = (
            self._strategy.num_replicas_in_sync > 1
            and not own_loss
            and not all(additive(m) for m in leaves(model.metrics))
        )
        # Each replica's part of a sum is saved summed (SUM) and restored split among the
        # replicas; a gathered state, the same on every replica, is saved once (MEAN).
        self._kept = []
        if keeps:
            for i, (v, summed) in enumerate(self._live()):
                aggregation = tf.VariableAggregation.SUM if summed else tf.VariableAggregation.MEAN
                if not summed and not tf.as_dtype(v.dtype).is_floating:
                    # An integer state (MeanIoU's confusion matrix), the same on every
                    # replica: MEAN is for floats only, and the first replica's is each one's.
                    aggregation = tf.VariableAggregation.ONLY_FIRST_REPLICA
                self._kept.append(_copy(v, f"{name}_kept_{i}_{v.name}", aggregation))
        self._overrides_x = overrides(model, "compute_metrics")
        # Traced once each, not at every epoch's reset, restore and read.
        self._reset = tf.function(self._reset_here)
        self._restore = tf.function(self._restore_here)
        self._read = tf.function(self._read_here)

    def _live(self) -> list[tuple]:
        """(variable, whether a read sums it over the replicas) of every metric's state."""
        return [(v, self._summed(m)) for m in self._model.metrics for v in m.variables]

    def _summed(self, metric: keras.metrics.Metric) -> bool:
        """Whether `metric` is read summed over the replicas: always, unless the metrics
        are gathered; then only the loss trackers, which measure each replica's share
        as `compute_loss` runs (a Keras metric holding no others)."""
        return not self.gathered or (additive(metric) and leaves([metric]) == [metric])

    # -- on each replica, in the step ---------------------------------------------------

    def add(self, loss: tf.Tensor, examples: tf.Tensor) -> None:
        """Adds this replica's share: `loss` its mean loss (as Keras's loss tracker takes
        it, not divided among the replicas), over `examples` examples."""
        examples = tf.cast(examples, tf.float64)
        self._loss.assign_add(tf.cast(loss, tf.float64) * examples)
        self._count.assign_add(examples)
        self._padded.assign_add(examples)

    def count(self, examples: tf.Tensor) -> None:
        """Counts this replica's `examples` where the model's own step reports the loss."""
        self._count.assign_add(tf.cast(examples, tf.float64))

    def measure(self, x, y, y_pred, w=None, real: tf.Tensor | None = None) -> None:
        """The model's `compute_metrics` on this replica's share, or with several replicas
        and a state that is not a sum, on every replica's (`real`: which rows are examples,
        not padding; None: all)."""
        if not self.gathered:
            self._compute(x, y, y_pred, w, real)
        else:
            context = tf.distribute.get_replica_context()
            share = {"y_pred": y_pred}
            if y is not None:
                share["y"] = y
            if w is not None:
                share["w"] = w
            if real is not None:  # all_gather takes no booleans
                share["real"] = tf.cast(real, tf.int32)
            if self._overrides_x:
                share["x"] = x
            # Made on this replica's device first: a batch straight from a tf.data iterator
            # under MultiWorkerMirroredStrategy has no device the gather can send from
            # ("destinations can not be empty").
            share = tf.nest.map_structure(tf.identity, share)
            every = _gathered(context, share)
            real = None if real is None else every["real"] > 0
            self._compute(every.get("x"), every.get("y"), every["y_pred"], every.get("w"), real)
        self.keep()

    def _compute(self, x, y, y_pred, w, real) -> None:
        if real is None:
            self._model.compute_metrics(x, y, y_pred, sample_weight=w)
            return

        def kept(a):
            return None if a is None else tf.boolean_mask(a, real)

        x, y, y_pred, w = tf.nest.map_structure(kept, (x, y, y_pred, w))

        def update() -> tf.Operation:
            self._model.compute_metrics(x, y, y_pred, sample_weight=w)
            return tf.no_op()

        # A replica's share of the last batch may be all padding: then it measures nothing.
        tf.cond(tf.reduce_any(real), update, tf.no_op)

    def keep(self, logs=None) -> None:
        """Copies this replica's metric state into the checkpointed copy (training only),
        and keeps `logs`, what a model's own step returned."""
        if logs is not None and self.logs is not None:
            self.logs.keep(logs)
        if not self._kept:
            return
        for copy, (v, _) in zip(self._kept, self._live(), strict=True):
            copy.assign(v.value)

    # -- outside the replicas -----------------------------------------------------------

    def _on_every_replica(self, compiled) -> tuple:
        return self._strategy.experimental_local_results(self._strategy.run(compiled))

    def _reset_here(self) -> None:
        # Each replica's own reset: a cross-replica assign would divide a start value
        # that is not 0 (a largest value's -inf) among the replicas.
        self._model.reset_metrics()
        self.keep()

    def _restore_here(self) -> None:
        for copy, (v, _) in zip(self._kept, self._live(), strict=True):
            v.assign(copy.read_value())

    def _read_here(self) -> dict:
        return {
            key: tf.convert_to_tensor(value)
            for key, value in self._model.get_metrics_result().items()
        }

    def _summed_names(self) -> set[str]:
        return {m.name for m in self._model.metrics if self._summed(m)}

    def variables(self) -> list:
        """What a checkpoint holds: the loss and count, and the metrics' kept state."""
        return [self._loss, self._count, self._padded, *self._kept]

    def restored(self) -> None:
        """Call after a checkpoint was restored into `variables()`."""
        if self._kept:
            self._on_every_replica(self._restore)

    def reset(self) -> None:
        for total in (self._loss, self._count, self._padded):
            total.assign(0.0)
        self._on_every_replica(self._reset)

    def names(self) -> list[str]:
        """What `result` reports, but the examples, as the model's metrics name them now;
        read on this process's replicas alone (no collective, unlike `result`)."""
        found = self._on_every_replica(self._read)[0]
        return ["loss", *(key for key, value in found.items() if key != "loss" and _scalar(value))]

    def _results(self) -> dict[str, float]:
        # Summed over every replica (and worker) as each variable is read.
        found = self._model.get_metrics_result()
        if self.gathered:  # every replica holds the whole state: the first's
            first = self._on_every_replica(self._read)[0]
            summed = self._summed_names()
            found = {key: value if key in summed else first[key] for key, value in found.items()}
        values = {key: number(value) for key, value in found.items() if _scalar(value)}
        if self.logs is not None and set(self.logs.names()) != set(found):
            values = self.logs.result()  # the step's own keys: what it returned last
        count = float(self._count.numpy())
        if self._own_loss:  # the step's own figures: a loss only if it reports one
            return {"loss": values.pop("loss"), **values} if "loss" in values else values
        values.pop("loss", None)
        return {"loss": float(self._loss.numpy()) / count if count else 0.0, **values}

    def totals(self) -> tuple[float, float]:
        """(summed loss, examples) over every replica; collective like `result`."""
        count = float(self._count.numpy())
        if self._own_loss:  # NaN where the model's own step reports no loss
            return self._results().get("loss", float("nan")) * count, count
        return float(self._loss.numpy()), count

    def result(self) -> dict[str, float]:
        """The mean loss, each metric, and the number of examples, over every replica."""
        return {**self._results(), "examples": int(self._count.numpy())}


def leaves(found: list) -> list[keras.metrics.Metric]:
    """Every metric in `found`, those a metric holds (compile's) in place of it."""
    flat = []
    for metric in found:
        inner = getattr(metric, "metrics", None)
        if isinstance(inner, (list, tuple)) and inner and inner[0] is not metric:
            flat.extend(leaves(inner))
        else:
            flat.append(metric)
    return flat


# What the collectives carry; any other dtype (uint8 images, booleans) goes as int32.
_GATHERED = (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64)


def _gathered(context, share: dict) -> dict:
    """`share` gathered from every replica along the batch axis, in its own dtypes."""
    dtypes = tf.nest.map_structure(lambda a: a.dtype, share)

    def sendable(a):
        return a if a.dtype in _GATHERED else tf.cast(a, tf.int32)

    every = context.all_gather(tf.nest.map_structure(sendable, share), axis=0)
    return tf.nest.map_structure(lambda a, dtype: tf.cast(a, dtype), every, dtypes)


def additive(metric: keras.metrics.Metric) -> bool:
    """Whether the sum of each replica's state is the state of their examples together:
    true of Keras's own metrics (counts, totals, confusion matrices), not known of any
    other class, a subclass of Keras's included, nor of a function of the user's that Keras
    averages (it may reduce over its batch: keras.io's EDSR scores `psnr(...)[0]`, the
    batch's first image)."""
    if type(metric).__module__.split(".")[0] != "keras":
        return False
    if isinstance(metric, keras.metrics.MeanMetricWrapper):
        function = internals.wrapped_function(metric)
        return getattr(function, "__module__", "keras").split(".")[0] == "keras"
    return True


def _scalar(value) -> bool:
    return int(tf.size(value)) == 1


def _copy(variable, name: str, aggregation) -> tf.Variable:
    return tf.Variable(
        tf.zeros(variable.shape, variable.dtype),
        trainable=False,
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=aggregation,
        name=name,
    )


def number(value) -> float:
    """A metric's `result()` as a float, whether it computes a tensor or returns its state
    variable itself (`return self.total`, as keras.io writes one): a Keras variable over a
    SyncOnRead one, which `float()` refuses and converting reads, summed over every replica."""
    return float(keras.ops.convert_to_numpy(value))


def _sum(name: str) -> tf.Variable:
    """A float64 total kept by each replica and summed over every replica when read."""
    return tf.Variable(
        0.0,
        dtype=tf.float64,
        trainable=False,
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.SUM,
        name=name,
    )


def prefixed(split: str, result: dict) -> dict:
    """`result` keyed as the summary and metrics.jsonl name it: train_loss, test_accuracy, ..."""
    return {f"{split}_{key}": value for key, value in result.items()}
