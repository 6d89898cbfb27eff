"""KerasHub models fine-tuned as their users fine-tune them (examples/hub_*_task.py: small
configs, no preset download): on 2 replicas equal to Keras's fit on one device, exported and
reloaded to the run's figures; on 2 real workers equal to one device. Dropout is turned off
(tests/keras_files/hub_without_dropout.py), as `check` turns it off: each replica draws its
own masks by design."""

import pytest

from tests.keras.helpers import path_of, trained_like_keras, two_workers_and_one_device

# Its own CI stage with the keras.io zoo (`pytest -m zoo`): minutes of models not ours.
pytestmark = pytest.mark.zoo

# The image classifier's ResNet normalises each batch: over the global batch, as one device
# does, with --sync_batch_norm (without it each replica normalises its own share). Keras
# makes a LoRA update's kernels float32 under a float64 policy, and its optimizer then
# cannot all-reduce float32 and float64 gradients in one batch on 2 replicas (under fit
# too): the LoRA model is compared in float32.
HUB = {
    "hub_text_classifier_task": {},
    "hub_causal_lm_lora_task": {"dtype": "float32"},
    "hub_image_classifier_task": {"sync_batch_norm": True},
    "hub_seq2seq_task": {},
}
WRAPPER = "hub_without_dropout"


@pytest.mark.parametrize("name", HUB)
def test_a_kerashub_model_on_2_replicas_trains_as_fit_on_one_device_and_exports(
    name, tmp_path, monkeypatch
):
    monkeypatch.setenv("HUB_EXAMPLE", name)
    result = trained_like_keras(WRAPPER, tmp_path, **HUB[name])
    if "lora" in name:  # the backbone frozen: only the low-rank updates and biases train
        trained = {v.path for v in result.state.model.trainable_weights}
        assert any("lora" in path for path in trained), sorted(trained)
        assert all("lora" in p or p.endswith("/bias") for p in trained), sorted(trained)


@pytest.mark.cluster
@pytest.mark.parametrize("name", HUB)
def test_a_kerashub_model_on_2_workers_trains_as_one_device(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HUB_EXAMPLE", name)  # the workers inherit it
    cluster, one = two_workers_and_one_device(tmp_path, str(path_of(WRAPPER)), 1, **HUB[name])
    close = 1e-5 if HUB[name].get("dtype") == "float32" else 1e-9
    for key in ("train_loss", "test_loss"):
        expected = one.summary["history"][-1][key]
        assert cluster["history"][-1][key] == pytest.approx(expected, abs=close), key
