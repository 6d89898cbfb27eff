"""What Keras's `fit` takes, tf_mgpu takes: inputs as a list, no labels for a model that makes
its own loss, a variable no loss reaches; and what no distribution strategy can run (a
stateful RNN) is refused in one line."""

import dataclasses
import json
import re

import keras
import numpy as np
import pytest

from tests.keras.helpers import (
    FIT,
    FLOAT64,
    ONE_DEVICE,
    assert_same_weights,
    built_as_tf_mgpu_builds,
    keras_fit_in_tf_mgpus_order,
    load,
    one_and_two,
    own_objects,
    path_of,
    trained_like_keras,
)
from tests.keras.test_optimizers import largest_difference_to
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError


def test_inputs_given_as_a_list_train_as_keras(tmp_path):
    trained_like_keras("list_inputs", tmp_path)


@pytest.mark.parametrize("accumulation_steps", [1, 2])
def test_a_variable_no_loss_reaches_is_skipped_as_keras_skips_it(tmp_path, accumulation_steps):
    compared = FIT if accumulation_steps == 1 else ONE_DEVICE
    result = trained_like_keras(
        "unreached_variable", tmp_path, compared, accumulation_steps=accumulation_steps
    )
    aux = [w for w in result.state.model.weights if w.path.startswith("aux/")]
    built = built_as_tf_mgpu_builds(load("unreached_variable"))
    initial = {w.path: w.numpy() for w in built.weights}
    for weight in aux:  # never moved: no gradient, no step
        np.testing.assert_array_equal(weight.numpy(), initial[weight.path])


def test_a_model_whose_train_step_makes_the_loss_trains_without_labels_and_shows_its_logs(
    tmp_path,
):
    config = Config(
        task=str(path_of("vae_own_step")), batch_size=16, epochs=2, seed=3, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    summary = result.summary
    last = summary["history"][-1]
    for key in ("train_loss", "train_reconstruction_loss", "train_kl_loss"):
        assert np.isfinite(last[key]), (key, last)
    assert not [key for key in [*summary, *last] if key.startswith("test_")], summary
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["train_loss"] == last["train_loss"]
    # The step returns its trackers' results: "loss" is the tracker named total_loss, read
    # by each replica as its own running mean, averaged over the replicas as fit shows it.
    model = result.state.model
    tracked = {m.name: float(m.result()) for m in model.metrics}
    assert last["train_loss"] == pytest.approx(tracked["total_loss"], rel=1e-6)
    reloaded = keras.saving.load_model(
        tmp_path / "model.keras", custom_objects=own_objects(load("vae_own_step"))
    )
    x = load("vae_own_step").load_data()[1][0]
    np.testing.assert_allclose(reloaded.encoder(x)[0], model.encoder(x)[0], atol=1e-6)


def test_a_stateful_rnn_is_refused_in_one_line_naming_the_layer(tmp_path):
    config = Config(
        task=str(path_of("stateful_lstm")), batch_size=8, epochs=1, model_dir=str(tmp_path)
    )
    with pytest.raises(UserError) as raised:
        training.run(config, strategy=cpu_strategy(2))
    said = str(raised.value)
    assert re.search(r"layer 'lstm(_\d+)?' \(LSTM\) is stateful=True", said), said
    assert "build it with stateful=False" in said, said


def test_float64_arrays_are_cast_to_floatx_as_fit_casts_them(tmp_path):
    config = Config(
        task=str(path_of("float64_arrays")), batch_size=16, epochs=1, model_dir=str(tmp_path)
    )
    result = training.run(config, strategy=cpu_strategy(2))
    assert np.isfinite(result.summary["test_loss"])


def test_metrics_a_model_without_call_updates_in_its_train_step_are_built_first():
    # Built on their first update inside the step, on each replica, their variables could
    # not be mirrored (UnliftableError): tf_mgpu builds them first, in the scope.
    one, two = one_and_two(load("no_call_metrics"))
    assert_same_weights(one, two, atol=1e-10)
    last = two.summary["history"][-1]
    assert 0 < last["train_sparse_categorical_accuracy"] <= 1, last
    assert (
        last["test_sparse_categorical_accuracy"]
        == one.summary["history"][-1]["test_sparse_categorical_accuracy"]
    )


@pytest.mark.parametrize("own_step", [True, False], ids=["own_train_step", "functional"])
def test_unseeded_keras_random_draws_train_on_two_replicas_and_resume_exactly(tmp_path, own_step):
    # keras.io's VAE samples with keras.random.normal(shape) and no seed: Keras makes its
    # generator on each replica's thread inside the step (UnliftableError, exit 1, under
    # Keras's fit on 2 replicas too). tf_mgpu makes it once in the scope; it is then one of
    # the run's random states: reproducible from --seed, and in the checkpoint.
    config = Config(batch_size=16, seed=3, jit_compile=False, epochs=2)

    def run(folder, epochs):
        task = load("unseeded_sampling", OWN_STEP=own_step)
        settings = {"model_dir": str(tmp_path / folder), "epochs": epochs}
        return training.run(dataclasses.replace(config, **settings), task, strategy=cpu_strategy(2))

    whole = run("whole", 2)
    assert whole.state.unseeded is not None
    assert whole.state.unseeded.state in whole.state.random_states()
    run("resumed", 1)
    resumed = run("resumed", 2)  # from the first epoch's checkpoint
    assert_same_weights(whole, resumed, atol=0)


@pytest.mark.parametrize(
    "name",
    [
        # keras.io's focal modulation network: fit never hands its layers training=True.
        "call_without_training",
        # keras.io's supervised contrastive loss: a Loss that computes in __call__.
        "loss_in_dunder_call",
        # keras.io's TransUNet: a metric of the user's own with an integer state (MeanIoU's).
        "integer_metric_state",
    ],
)
def test_what_keras_fit_runs_on_one_device_trains_on_two_replicas_as_it(tmp_path, name):
    trained_like_keras(name, tmp_path)  # weights == Keras fit's; test figures == evaluate's


def test_a_train_step_feeding_the_compiled_loss_one_of_two_outputs_trains_as_fit(tmp_path):
    # keras.io's patch_convnet: call() returns logits and attention maps, its steps hand the
    # compiled loss the logits (its test_step reports the loss Keras divided by the replicas,
    # as Keras's evaluate on 2 replicas does: weights compared).
    config = dataclasses.replace(FLOAT64, epochs=1, model_dir=str(tmp_path))
    run = training.run(config, load("step_feeds_one_output"), strategy=cpu_strategy(2))
    fitted = keras_fit_in_tf_mgpus_order(load("step_feeds_one_output"), 1, 32)
    assert largest_difference_to(run, fitted) < 1e-6
