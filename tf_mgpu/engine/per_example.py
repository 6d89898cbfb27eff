"""One entry of compile's loss or metrics as a function of one value per example.

A loss object's own reduction is ignored: the engine reduces per-example values
itself (see `tf_mgpu.engine.objective`). Strings are resolved as Keras resolves
them, 'accuracy' by the shapes of the labels and the output it measures.
"""

from collections.abc import Callable

import keras
import tensorflow as tf

from tf_mgpu import internals

_ACCURACY = ("accuracy", "acc")


def is_sparse_categorical(given) -> bool:
    if isinstance(given, str):
        return given.lower() in ("sparse_categorical_crossentropy", "scce")
    if isinstance(given, keras.losses.SparseCategoricalCrossentropy):
        return True
    return given is keras.losses.sparse_categorical_crossentropy


def loss_function(given) -> Callable:
    """The compiled loss as a per-example function, ignoring the object's own reduction."""
    loss = keras.losses.get(given) if isinstance(given, (str, dict)) else given
    if isinstance(loss, keras.losses.Loss):
        fn, loss_dtype = loss.call, loss.dtype
    else:  # a function (y_true, y_pred), as Keras wraps it
        fn, loss_dtype = loss, keras.config.floatx()

    def per_example(y: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        # As Loss.__call__ does before its `call`: both in the loss's dtype (floatx),
        # except that a float64 model keeps float64 (exact comparisons).
        dtype = tf.float64 if y_pred.dtype == tf.float64 else loss_dtype
        y, y_pred = _same_rank(tf.cast(y, dtype), tf.cast(y_pred, dtype))
        return _one_per_example(fn(y, y_pred))

    return per_example


def metric_function(given, y_shape, y_pred_shape) -> tuple[str, Callable]:
    """(name, per-example function) for one entry of compile's `metrics`, or (name, the
    Keras metric) for a stateful one, which `metrics.Sums` keeps a copy of."""
    if isinstance(given, str) and given.lower() in _ACCURACY:
        return given, _accuracy(y_shape, y_pred_shape)
    metric = keras.metrics.get(given) if isinstance(given, (str, dict)) else given
    if isinstance(metric, keras.metrics.Metric):
        if not isinstance(metric, keras.metrics.MeanMetricWrapper):
            # Stateful (AUC, Precision...): its state is summed over replicas (metrics.Sums).
            return (given if isinstance(given, str) else metric.name), metric
        fn, kwargs = internals.metric_function(metric)
        name = metric.name
    else:
        fn, kwargs = metric, {}
        name = getattr(fn, "__name__", "metric")
    if isinstance(given, str):  # as Keras names it: 'mae' stays 'mae'
        name = given

    def per_example(y: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        return _one_per_example(fn(y, y_pred, **kwargs))

    return name, per_example


def _accuracy(y_shape, y_pred_shape) -> Callable:
    """Keras's choice for 'accuracy': binary, sparse categorical or categorical by shapes."""
    fn = keras.metrics.categorical_accuracy
    if y_pred_shape is not None:
        if y_pred_shape[-1:] == (1,):
            fn = keras.metrics.binary_accuracy
        elif len(y_shape) < len(y_pred_shape) or (y_shape[-1:] == (1,) and y_pred_shape[-1] != 1):
            fn = keras.metrics.sparse_categorical_accuracy

    def per_example(y: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        return _one_per_example(fn(y, y_pred))

    return per_example


def _same_rank(y: tf.Tensor, y_pred: tf.Tensor) -> tuple:
    """Labels (N,) against outputs (N, 1), or the reverse, made the same rank, as Keras's
    loss wrapper does; other shapes pass unchanged (sparse labels keep one rank less)."""
    if y.shape.rank == y_pred.shape.rank - 1 and y_pred.shape[-1] == 1:
        y = tf.expand_dims(y, -1)
    elif y.shape.rank == y_pred.shape.rank + 1 and y.shape[-1] == 1:
        y = tf.squeeze(y, -1)
    return y, y_pred


def _one_per_example(values: tf.Tensor) -> tf.Tensor:
    values = tf.convert_to_tensor(values)
    if values.shape.rank is not None and values.shape.rank > 1:
        values = tf.reduce_mean(values, axis=list(range(1, values.shape.rank)))
    return values
