"""What a model's own `train_step` or `test_step` returns, kept as Keras's `fit` and `evaluate`
show it.

Keras shows, at the end of an epoch or an evaluation, the model's metrics read over every
replica when the step returns a dict keyed as they are (`{m.name: m.result() ...}`), and
otherwise the dict the last step returned, averaged over the replicas (`reduce_per_replica`,
"auto"). A VAE's step returns `{"loss": total_loss_tracker.result(), ...}`, a WGAN's the
step's own `{"d_loss": d_loss, ...}`: those are the figures its user expects.

The compiled loop cannot hand back what its last step returned, so each replica writes it
into variables read as their mean over the replicas (and workers). Their names, shapes and
dtypes are known before the loop is built by tracing the step once, not run (`traced`).
"""

import tensorflow as tf

from tf_mgpu.engine.model import unseeded


class StepLogs:
    """The numbers a step returns (a dict of scalars), the last step's, per replica."""

    def __init__(self, names: list[str]):
        self._variables = {
            name: tf.Variable(
                0.0,
                dtype=tf.float64,
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.MEAN,
                name=f"step_log_{index}",
            )
            for index, name in enumerate(names)
        }

    @classmethod
    def traced(cls, strategy: tf.distribute.Strategy, step) -> "StepLogs":
        """The logs of `step()` (a model's `train_step` on a few examples), found by tracing
        it in a function that never runs; make it in `strategy.scope()`."""

        @tf.function(autograph=False)
        def probe():
            return strategy.run(unseeded.carried(step))

        returned = probe.get_concrete_function().structured_outputs
        return cls(_scalar_names(returned))

    def keep(self, logs) -> None:
        """On each replica: what its step returned."""
        flat = _flat(logs)
        for name, variable in self._variables.items():
            variable.assign(tf.cast(tf.reshape(tf.convert_to_tensor(flat[name]), []), tf.float64))

    def names(self) -> list[str]:
        return list(self._variables)

    def result(self) -> dict[str, float]:
        """The last step's logs, each the mean over every replica; collective under
        MultiWorkerMirroredStrategy, like reading any metric."""
        return {name: float(variable.numpy()) for name, variable in self._variables.items()}


def _flat(logs) -> dict:
    """`logs` with nested dicts merged in, as Keras's `pythonify_logs` shows them (a step that
    returns `{m.name: m.result() for m in self.metrics}` returns the compiled metrics' dict
    under "compile_metrics")."""
    if not isinstance(logs, dict):
        return {}
    flat = {}
    for name, value in sorted(logs.items()):
        if isinstance(value, dict):
            flat.update(_flat(value))
        else:
            flat[name] = value
    return flat


def _scalar_names(logs) -> list[str]:
    """The keys of `logs` (flattened) whose values are one number each (what fit shows)."""
    found = []
    for name, value in _flat(logs).items():
        if isinstance(value, tf.distribute.DistributedValues):
            value = value.values[0]  # each replica's has the same shape and dtype
        spec = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        if spec is None or dtype is None:
            continue
        numeric = tf.as_dtype(dtype).is_floating or tf.as_dtype(dtype).is_integer
        if numeric and spec.num_elements() == 1:
            found.append(name)
    return found
