"""The optimizer checkpointed by name: each slot lands in its own variable."""

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.engine.state import checkpoint, optimizer_slots


def two_kernels_of_one_shape(build_order=list):
    """Two Dense layers of 4 -> 4 (kernels and biases of one shape) and their Adam, built
    over the trainable variables in `build_order`."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), keras.layers.Dense(4)])
    optimizer = keras.optimizers.Adam()
    optimizer.build(build_order(model.trainable_variables))
    return model, optimizer


def slot(optimizer, reference, kind):
    """The optimizer's `kind` slot of `reference`, found by the name Keras gives it."""
    name = f"{reference.path.replace('/', '_')}_{kind}"
    (found,) = [v for v in optimizer.variables if v.name == name]
    return found


def test_slots_are_named_by_the_index_of_their_variable_and_their_kind():
    model, optimizer = two_kernels_of_one_shape()
    named = optimizer_slots.named(optimizer, model.trainable_variables)
    assert sorted(named) == sorted(
        ["iteration"] + [f"slot_{i}_{k}" for i in range(4) for k in ("momentum", "velocity")]
    )
    for i, reference in enumerate(model.trainable_variables):
        assert named[f"slot_{i}_velocity"] is slot(optimizer, reference, "velocity")


def test_the_same_model_built_again_in_one_process_has_the_same_names():
    # Keras numbers the layers of the second model (dense_2, dense_3): paths differ.
    first, second = two_kernels_of_one_shape(), two_kernels_of_one_shape()
    names = [sorted(optimizer_slots.named(o, m.trainable_variables)) for m, o in (first, second)]
    assert names[0] == names[1]
    assert first[0].weights[0].path != second[0].weights[0].path


def test_a_loss_scale_optimizer_keeps_its_inner_names_and_adds_its_own():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)])
    plain = keras.optimizers.Adam()
    plain.build(model.trainable_variables)
    scaled = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam())
    scaled.build(model.trainable_variables)
    inner = set(optimizer_slots.named(plain, model.trainable_variables))
    named = optimizer_slots.named(scaled, model.trainable_variables)
    own = {name for name in named if name.startswith(optimizer_slots.LOSS_SCALE)}
    assert set(named) - own == inner
    assert {"loss_scale_dynamic_scale", "loss_scale_step_counter"} <= own
    assert named["iteration"] is scaled.iterations  # the inner optimizer's, which counts


def test_adams_slots_land_in_their_own_variables_whatever_order_the_optimizer_made_them(
    tmp_path,
):
    model, optimizer = two_kernels_of_one_shape()
    for i, reference in enumerate(model.trainable_variables):
        for code, kind in ((1, "momentum"), (2, "velocity")):
            variable = slot(optimizer, reference, kind)
            variable.assign(tf.fill(variable.shape, float(10 * i + code)))
    held = {"weights": model.weights}
    saved = {**held, "optimizer": optimizer_slots.named(optimizer, model.trainable_variables)}
    checkpoint.Checkpoints(saved, str(tmp_path), is_chief=True).save(1)

    # The same model, its optimizer built over the variables in reverse: the slots are
    # made in another order, and each has a twin of the same shape to be mistaken for.
    model, optimizer = two_kernels_of_one_shape(lambda v: list(reversed(v)))
    held = {"weights": model.weights}
    restored = {**held, "optimizer": optimizer_slots.named(optimizer, model.trainable_variables)}
    assert checkpoint.Checkpoints(restored, str(tmp_path), is_chief=True).restore()
    for i, reference in enumerate(model.trainable_variables):
        for code, kind in ((1, "momentum"), (2, "velocity")):
            value = slot(optimizer, reference, kind).numpy()
            np.testing.assert_array_equal(value, np.full(value.shape, 10.0 * i + code), kind)
