"""A callback's state written as strict JSON and read back exactly."""

import json

import keras
import numpy as np

from tf_mgpu.engine import callback_state


def test_early_stopping_state_comes_back_exactly_with_its_comparison_and_best_weights():
    stopping = keras.callbacks.EarlyStopping(min_delta=0.1, restore_best_weights=True)
    stopping._set_monitor_op()  # negates min_delta for a loss, as its first epoch does
    stopping.best, stopping.wait = np.float64(0.25), 3
    stopping.best_weights = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3)]
    text = json.dumps(callback_state.state_of(stopping), allow_nan=False)

    fresh = keras.callbacks.EarlyStopping(min_delta=0.1, restore_best_weights=True)
    fresh.on_train_begin()
    callback_state.restore(fresh, json.loads(text))
    assert fresh.monitor_op is stopping.monitor_op
    assert fresh.min_delta == -0.1
    assert (fresh.best, fresh.wait) == (0.25, 3)
    assert type(fresh.best) is np.float64
    for got, want in zip(fresh.best_weights, stopping.best_weights, strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_what_cannot_be_read_back_is_left_out_not_written_wrong():
    scheduler = keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate)
    scheduler.compare = np.less  # importable by name
    scheduler.handle = object()
    state = callback_state.state_of(scheduler)
    assert "schedule" not in state  # a lambda has no importable name
    assert "handle" not in state
    assert state["compare"] == {"function": "numpy:less"}
