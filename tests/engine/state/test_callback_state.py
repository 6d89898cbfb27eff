"""A callback's state written as strict JSON and read back exactly."""

import json

import keras
import numpy as np

from tf_mgpu.engine.state import callback_state


def test_early_stopping_state_comes_back_exactly_with_its_best_weights():
    stopping = keras.callbacks.EarlyStopping(min_delta=0.1, restore_best_weights=True)
    stopping.best, stopping.wait, stopping.best_epoch = np.float64(0.25), 3, 4
    stopping.best_weights = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3)]
    text = json.dumps(callback_state.state_of(stopping), allow_nan=False)

    fresh = keras.callbacks.EarlyStopping(min_delta=0.1, restore_best_weights=True)
    fresh.on_train_begin()
    callback_state.restore(fresh, json.loads(text))
    assert (fresh.best, fresh.wait, fresh.best_epoch) == (0.25, 3, 4)
    assert type(fresh.best) is np.float64
    for got, want in zip(fresh.best_weights, stopping.best_weights, strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_constructor_arguments_and_functions_are_this_runs_not_the_saved_ones():
    # A resumed run whose callbacks() now says patience=5 gets patience 5; the monitor's
    # comparison is made again from min_delta, which its first use negates once.
    before = keras.callbacks.EarlyStopping(patience=2, min_delta=0.1)
    before._set_monitor_op()
    state = callback_state.state_of(before)
    assert not {"patience", "min_delta", "monitor_op"} & set(state), state
    after = keras.callbacks.EarlyStopping(patience=5, min_delta=0.1)
    callback_state.restore(after, json.loads(json.dumps(state)))
    after._set_monitor_op()
    assert (after.patience, after.min_delta) == (5, -0.1)


def test_infinities_and_nan_come_back_and_what_cannot_is_left_out():
    class Own(keras.callbacks.Callback):
        pass

    own = Own()
    own.best, own.worst, own.gap = float("inf"), np.float64(-np.inf), float("nan")
    own.handle = object()
    state = json.loads(json.dumps(callback_state.state_of(own), allow_nan=False))
    assert "handle" not in state
    fresh = Own()
    callback_state.restore(fresh, state)
    assert fresh.best == float("inf")
    assert fresh.worst == -np.inf
    assert type(fresh.worst) is np.float64
    assert np.isnan(fresh.gap)
