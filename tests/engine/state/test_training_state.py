"""The training state: its randomness (each replica its own dropout masks, reproducible,
saved) and its resume under another --dtype."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import load
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.engine.input import data
from tf_mgpu.engine.state import training_state as state_module
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError


def dropout_task() -> Task:
    def build_model():
        model = keras.Sequential([keras.Input((256,)), keras.layers.Dropout(0.5)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    return Task(name="dropout", where="dropout", build_model=build_model, load_data=None)


def masks(replicas: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Each replica's dropout mask for one draw, and the random state after it."""
    strategy = cpu_strategy(replicas)
    sample = data.Split(np.ones((2, 256), np.float32), np.ones((2, 256), np.float32))
    state = state_module.create_state(strategy, Config(seed=seed), dropout_task(), sample)

    @tf.function
    def draw():
        def replica():
            with state_module.replica_random_streams(state):
                return state.model(tf.ones((1, 256)), training=True)

        return strategy.run(replica)

    drawn = [np.array(t.numpy()) != 0 for t in strategy.experimental_local_results(draw())]
    (random,) = state.random_states()
    copies = random.value.values if hasattr(random.value, "values") else [random.value]
    after = [np.array(c.numpy()) for c in copies]
    for copy in after[1:]:
        np.testing.assert_array_equal(copy, after[0])  # the same state on every replica
    return drawn, after[0]


def test_each_replica_draws_its_own_masks_from_the_state_one_device_would_have():
    (one,), one_state = masks(1)
    two, two_state = masks(2)
    assert not np.array_equal(two[0], two[1]), "both replicas drew the same mask"
    np.testing.assert_array_equal(two[0], one)  # replica 0 draws what one device draws
    np.testing.assert_array_equal(two_state, one_state)


def test_masks_are_reproducible_from_the_seed():
    first, _ = masks(2, seed=4)
    again, _ = masks(2, seed=4)
    other, _ = masks(2, seed=5)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_the_random_state_is_checkpointed_only_when_the_model_has_one():
    sample = data.Split(np.ones((2, 256), np.float32), np.ones((2, 256), np.float32))
    state = state_module.create_state(cpu_strategy(1), Config(), dropout_task(), sample)
    (random,) = state.checkpointed()["random"]
    assert random.path.endswith("seed_generator_state"), random.path

    def build_dense():
        model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(256)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    dense = dataclasses.replace(dropout_task(), build_model=build_dense)
    assert (
        "random"
        not in state_module.create_state(cpu_strategy(1), Config(), dense, sample).checkpointed()
    )


STEPS = 1024 // 32  # adam_decay's training split at 2 replicas x 16


@pytest.mark.parametrize(
    ("before", "after"),
    [("float32", "mixed_float16"), ("mixed_float16", "float32"), ("float32", "mixed_bfloat16")],
)
def test_a_run_resumes_under_another_dtype_with_its_optimizer(tmp_path, capsys, before, after):
    # Variables are float32 under all three: the checkpoint allows the change. Under
    # mixed_float16 the optimizer is a LossScaleOptimizer, with variables of its own.
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False, model_dir=str(tmp_path))
    first = training.run(
        dataclasses.replace(config, dtype=before), load("adam_decay"), strategy=cpu_strategy(2)
    )
    assert int(first.state.optimizer.iterations.numpy()) == STEPS, "a step was skipped"
    capsys.readouterr()
    config = dataclasses.replace(config, epochs=2, dtype=after)
    resumed = training.run(config, load("adam_decay"), strategy=cpu_strategy(2))
    said = capsys.readouterr().out
    assert f"tf_mgpu resume: from {tmp_path}" in said, said
    assert f"--dtype {before} -> {after}" in said, said
    assert resumed.summary["dtype"] == after
    assert [epoch["epoch"] for epoch in resumed.summary["history"]] == [1, 2]
    # Adam went on from the first epoch's updates: a fresh optimizer would count at most one.
    assert int(resumed.state.optimizer.iterations.numpy()) > STEPS
    if resumed.state.steps is not None:
        assert int(resumed.state.steps.numpy()) == 2 * STEPS


def test_a_resume_between_float64_and_32_bits_is_refused_in_one_line_that_keeps_the_run(
    tmp_path,
):
    config = Config(batch_size=16, epochs=1, seed=3, jit_compile=False, model_dir=str(tmp_path))
    training.run(config, load("adam_decay"), strategy=cpu_strategy(2))
    wider = dataclasses.replace(config, epochs=2, dtype="float64")
    with pytest.raises(UserError, match="holds weights/0 as float32 and this run makes it float64"):
        training.run(wider, load("adam_decay"), strategy=cpu_strategy(2))
    again = training.run(
        dataclasses.replace(config, epochs=2), load("adam_decay"), strategy=cpu_strategy(2)
    )
    assert [epoch["epoch"] for epoch in again.summary["history"]] == [1, 2]


def test_a_checkpoint_whose_loss_scaling_skipped_steps_is_not_resumed_as_if_it_had_not():
    # Counted by the optimizer's updates, the run would resume 3 steps early in its data.
    sample = data.Split(np.ones((2, 256), np.float32), np.ones((2, 256), np.float32))
    state = state_module.create_state(cpu_strategy(1), Config(), dropout_task(), sample)
    assert state.steps is None
    state.optimizer.iterations.assign(37)
    with pytest.raises(UserError, match="took 40 steps and applied 37 updates"):
        state.settle({"steps": np.int64(40)}.get)
    state.settle({"steps": np.int64(37)}.get)  # none skipped: the counts agree
    assert state.may_lack("steps")
    assert state.may_lack("optimizer/loss_scale_dynamic_scale")
    assert not state.may_lack("optimizer/slot_0_momentum")
