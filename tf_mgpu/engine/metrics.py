"""The loss and the compiled metrics summed on every replica, read as totals over the cluster."""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class OfOutput:
    """A stateful Keras metric of one output of a model with several: `pick(y, y_pred)`
    gives that output's labels and prediction."""

    metric: keras.metrics.Metric
    pick: Callable


@dataclasses.dataclass(frozen=True)
class Weighted:
    """A metric of compile's `weighted_metrics` (a per-example function, a stateful Keras
    metric or an `OfOutput`): updated with the examples' sample weights, as Keras updates
    those, where compile's `metrics` are not."""

    metric: Callable | keras.metrics.Metric | OfOutput


def _whole(y, y_pred) -> tuple:
    return y, y_pred


class Sums:
    """Running sums of the per-example loss, of each metric, and of the examples.

    Each replica adds to its own copy with no communication in the step; a
    read sums the copies of every replica on every worker (SyncOnRead, SUM),
    in float64, so a mean over any number of replicas is exact. Create it
    inside `strategy.scope()`. `reset` touches only local copies; under
    MultiWorkerMirroredStrategy `result` and `totals` are collective, so
    every worker must call them at the same point.

    `metrics` maps each metric's name to its per-example function (y, y_pred),
    or to a stateful Keras metric (AUC, Precision, Recall...): each Sums keeps a
    fresh copy of it, whose state (counts, confusion matrices) every replica
    updates and a read sums over every replica and worker. Aggregating the
    state, not each replica's result, is what makes it exact. Call `build` on a
    sample before the first compiled step: some metrics make their state then.
    A stateful metric of one output of several comes as `OfOutput`.

    `losses` names each output's loss of a model with several (`price_loss`...),
    summed like the loss from what `update` is given as `parts`.

    A metric given as `Weighted` (compile's `weighted_metrics`) takes each example's
    sample weight `w` times its padding weight: a mean is sum(value x w x padding) /
    sum(w x padding) over every replica and worker (0 when that is 0, as Keras's
    `divide_no_nan`), a stateful metric gets `w x padding` as its `sample_weight`.
    Without sample weights they equal the unweighted metrics, as in Keras. Only
    such a Sums holds the sum of the weights, so others keep their variables and ops.

    Summing each replica's state is exact for Keras's own metrics, whose states are
    counts and totals, and not known to be for a user's own (a largest value is not
    a sum). With several replicas a user's `Metric` subclass is updated on every
    replica with the whole global batch (`all_gather`, padding dropped) and read
    from one replica, so it reports what it reports on one device whatever its state
    holds (see `Gathered`).
    """

    def __init__(
        self,
        name: str,
        metrics: dict[str, Callable | keras.metrics.Metric | OfOutput | Weighted],
        losses: tuple[str, ...] = (),
    ):
        self._stateful = {}  # name -> (this Sums's copy of the metric, what it measures)
        self._weighted = []  # the names of the metrics updated with the sample weights
        means = {}
        for key, given in metrics.items():
            if isinstance(given, Weighted):
                self._weighted.append(key)
                given = given.metric
            metric, pick = (
                (given.metric, given.pick) if isinstance(given, OfOutput) else (given, _whole)
            )
            if isinstance(metric, keras.metrics.Metric):
                self._stateful[key] = (type(metric).from_config(metric.get_config()), pick)
            else:
                means[key] = given
        self._metrics = {k: m for k, m in means.items() if k not in self._weighted}
        self._weighted_means = {k: m for k, m in means.items() if k in self._weighted}
        # The order (loss, metrics..., count) is the checkpoint's: keep it.
        keys = ("loss", *losses, *self._metrics, *self._weighted_means, "count")
        self._sums = {key: _sum(f"{name}_{key}") for key in keys}
        # The sum of w x padding, the denominator of the weighted means; only when needed.
        self._weight = _sum(f"{name}_sample_weight") if self._weighted_means else None
        self._strategy = tf.distribute.get_strategy()
        replicas = self._strategy.num_replicas_in_sync
        self._gathered = {
            key: Gathered(metric, self._strategy)
            for key, (metric, _) in self._stateful.items()
            if replicas > 1 and not additive(metric)
        }

    def update(
        self,
        per_example_loss: tf.Tensor,
        y: tf.Tensor,
        y_pred: tf.Tensor,
        weights: tf.Tensor | None = None,
        parts: dict[str, tf.Tensor] | None = None,
        w: tf.Tensor | None = None,
    ) -> None:
        """Adds one replica's batch; examples of weight 0 (padding) count for nothing.
        `parts`: each output's per-example loss, for a model with several. `w`: the
        examples' sample weights, if any, which only the weighted metrics read."""
        padded = weights is not None
        if not padded:
            weights = tf.ones_like(per_example_loss, dtype=tf.float64)
        weights = tf.cast(weights, tf.float64)
        values = {"loss": per_example_loss, **(parts or {})}
        values.update({name: fn(y, y_pred) for name, fn in self._metrics.items()})
        for key, value in values.items():
            self._sums[key].assign_add(tf.reduce_sum(tf.cast(value, tf.float64) * weights))
        self._sums["count"].assign_add(tf.reduce_sum(weights))
        weighted = weights
        if self._weighted and w is not None:  # no op unless the model has weighted metrics
            weighted = weights * tf.cast(w, tf.float64)
        for key, fn in self._weighted_means.items():
            value = tf.cast(fn(y, y_pred), tf.float64)
            self._sums[key].assign_add(tf.reduce_sum(value * weighted))
        if self._weight is not None:
            self._weight.assign_add(tf.reduce_sum(weighted))
        plain = {k: v for k, v in self._stateful.items() if k not in self._gathered}
        for key, (metric, pick) in plain.items():
            chosen = weighted if key in self._weighted else weights
            metric.update_state(*pick(y, y_pred), sample_weight=chosen)
        if self._gathered:
            self._update_gathered(y, y_pred, weights, w, padded)

    def _update_gathered(self, y, y_pred, weights, w, padded: bool) -> None:
        """Updates each gathered metric with every replica's examples, as one device would:
        the padding dropped, the sample weights given only to `weighted_metrics`."""
        context = tf.distribute.get_replica_context()
        every = context.all_gather(
            {"y": y, "y_pred": y_pred, "weights": weights, **({} if w is None else {"w": w})},
            axis=0,
        )
        real = every["weights"] > 0

        def kept(a):
            return tf.boolean_mask(a, real) if padded else a

        y, y_pred = tf.nest.map_structure(kept, (every["y"], every["y_pred"]))
        w = kept(every["w"]) if w is not None else None
        for key, gathered in self._gathered.items():
            metric, pick = self._stateful[key]
            chosen = w if key in self._weighted else None
            metric.update_state(*pick(y, y_pred), sample_weight=chosen)
            gathered.keep()

    def names(self) -> list[str]:
        """What `result` reports, but the examples: 'loss', each output's loss, then each
        metric's name."""
        return self._order([*(k for k in self._sums if k != "count"), *self._stateful])

    def _order(self, keys: list[str]) -> list[str]:
        """`keys` as `result` orders them: the unweighted ones as given, then the weighted
        ones in compile's order, as Keras lists them."""
        plain = [key for key in keys if key not in self._weighted]
        return [*plain, *(key for key in self._weighted if key in keys)]

    @property
    def stateful(self) -> bool:
        """Whether any metric is a stateful Keras metric (then call `build` first)."""
        return bool(self._stateful)

    def build(self, y, y_pred) -> None:
        """Makes every stateful metric's state (in the strategy's scope), then empties it."""
        for metric, pick in self._stateful.values():
            metric.update_state(*pick(y, y_pred))
            metric.reset_state()
        for gathered in self._gathered.values():
            gathered.build()

    def _totals(self) -> list[tf.Variable]:
        return [*self._sums.values(), *([] if self._weight is None else [self._weight])]

    def variables(self) -> list[tf.Variable]:
        """What a checkpoint holds: the totals, each summed metric's state, and each
        gathered metric's copy (`Gathered.saved`)."""
        stateful = [
            v
            for key, (m, _) in self._stateful.items()
            for v in (self._gathered[key].saved if key in self._gathered else m.variables)
        ]
        return [*self._totals(), *stateful]

    def restored(self) -> None:
        """Call after a checkpoint was restored into `variables()`."""
        for gathered in self._gathered.values():
            gathered.restore()

    def reset(self) -> None:
        for total in self._totals():
            total.assign(0.0)
        for key, (metric, _) in self._stateful.items():
            if key in self._gathered:
                self._gathered[key].reset()
            else:
                metric.reset_state()

    def totals(self) -> tuple[float, float]:
        """(summed loss, examples) over every replica; collective like `result`."""
        return float(self._sums["loss"].numpy()), float(self._sums["count"].numpy())

    def result(self) -> dict[str, float]:
        """The mean loss and mean of each metric, and the number of examples, over every replica."""
        totals = {key: float(total.numpy()) for key, total in self._sums.items()}
        count = totals.pop("count")
        weight = count if self._weight is None else float(self._weight.numpy())
        means = {
            key: (total / weight if weight else 0.0) if key in self._weighted else total / count
            for key, total in totals.items()
        }
        states = {
            key: self._gathered[key].result() if key in self._gathered else number(m.result())
            for key, (m, _) in self._stateful.items()
        }
        found = {**means, **states}
        return {**{key: found[key] for key in self._order(list(found))}, "examples": int(count)}


def additive(metric: keras.metrics.Metric) -> bool:
    """Whether the sum of each replica's state is the state of their examples together:
    true of Keras's own metrics (counts, totals, confusion matrices), not known of any
    other class, a subclass of Keras's included."""
    return type(metric).__module__.split(".")[0] == "keras"


class Gathered:
    """A metric every replica updates with the whole global batch, so each replica's
    state is the state one device would hold, and which is read on one replica.

    Its state cannot go into a checkpoint as it is: a variable that syncs on read
    is saved as the sum over replicas and restored divided by the replicas of the
    run that restores it, another number on another layout. The checkpoint holds
    `saved` instead, a copy of each state variable averaged on save (every
    replica's is the same), which `restore` copies back.
    """

    def __init__(self, metric: keras.metrics.Metric, strategy: tf.distribute.Strategy):
        self._metric = metric
        self._strategy = strategy
        self.saved = []
        # Traced once each, not at every epoch's reset and read.
        self._reset = tf.function(self._reset_here)
        self._restore = tf.function(self._restore_here)
        self._result = tf.function(lambda: tf.convert_to_tensor(metric.result()))

    def build(self) -> None:
        """Makes the copies, once the metric's state exists (in the strategy's scope)."""
        self.saved = [
            tf.Variable(
                tf.zeros(v.shape, v.dtype),
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.MEAN,
                name=f"gathered_{i}",
            )
            for i, v in enumerate(self._metric.variables)
        ]
        self.reset()

    def keep(self) -> None:
        """In the replica step, after each update: copies this replica's state."""
        for copy, v in zip(self.saved, self._metric.variables, strict=True):
            copy.assign(v.value)

    def _on_every_replica(self, compiled) -> tuple:
        return self._strategy.experimental_local_results(self._strategy.run(compiled))

    def _reset_here(self) -> None:
        self._metric.reset_state()
        self.keep()

    def _restore_here(self) -> None:
        for copy, v in zip(self.saved, self._metric.variables, strict=True):
            v.assign(copy.read_value())

    def reset(self) -> None:
        """Each replica's own reset (a cross-replica assign would divide a start value
        that is not 0 among the replicas)."""
        self._on_every_replica(self._reset)

    def restore(self) -> None:
        self._on_every_replica(self._restore)

    def result(self) -> float:
        """The first replica's result (every replica holds the same state)."""
        return number(self._on_every_replica(self._result)[0])


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


class KerasMetrics:
    """The metrics of a model that trains with its own `train_step` (or is evaluated with
    its own `test_step`), read as `Sums`.

    That step updates the model's own Keras metrics (`model.metrics`): state
    variables that sync on read, so a read outside the replicas sums every
    replica's (collective under MultiWorkerMirroredStrategy, as `Sums`). The
    examples are counted here, since a step may weight its metrics otherwise.
    Training and evaluation share the model's metrics, as in Keras: read one
    before the other resets them.
    """

    def __init__(self, model, name: str):
        self._model = model
        self._count = _sum(f"{name}_count")

    def count(self, examples: tf.Tensor) -> None:
        """Adds one replica's batch of `examples` examples; called in the replica step."""
        self._count.assign_add(tf.cast(examples, tf.float64))

    def names(self) -> None:
        """Unknown before the step runs: it reports what it reports."""
        return None

    def variables(self) -> list:
        return [self._count, *self._model.metrics_variables]

    def restored(self) -> None:
        """Nothing to do after a restore: the model's metrics are sums (as under `fit`)."""

    def reset(self) -> None:
        self._count.assign(0.0)
        self._model.reset_metrics()

    def totals(self) -> tuple[float, float]:
        """(mean loss x examples, examples): what `Sums.totals` gives, from the step's
        own loss tracker (a metric named 'loss'); NaN loss when the step keeps none."""
        count = float(self._count.numpy())
        return self._loss() * count, count

    def result(self) -> dict[str, float]:
        values = {
            name: number(value)
            for name, value in self._model.get_metrics_result().items()
            if tf.size(value) == 1
        }
        return {**values, "examples": int(self._count.numpy())}

    def _loss(self) -> float:
        found = [m for m in self._model.metrics if m.name == "loss"]
        return number(found[0].result()) if found else float("nan")
