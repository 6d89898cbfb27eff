"""The keras.io zoo (tests/zoo/README.md): docs/zoo.md lists every example the rule selects,
and each adapted example ends as docs/zoo.md says (`python -m tests.zoo` remakes the page).

Each example runs in a process of its own (`tests.zoo.one`, forked from one that has imported
TensorFlow): ten seconds to a few minutes each, mostly tracing. The runs are their own stage
(`pytest -m zoo`, as CI runs them), on every third example the page records as run
(`catalog.ci_sample`); the page's check is in the suite.
"""

import json
import sys

import pytest

from tests import support
from tests.keras.helpers import two_workers_and_one_device
from tests.zoo import catalog

PAGE = support.ROOT / "docs" / "zoo.md"

# A handful on 2 real workers: an embedding and attention trained by Adam, a recurrent model
# over tokens, a per-pixel loss, a train_step of the example's own, a custom preprocessing
# layer before BatchNormalization. EDSR's own train_step updates its loss tracker with the
# loss Keras has divided by the replicas, and its PSNR with each share's first image: its
# training figures are its replicas' (as under Keras's fit on 2 replicas), its weights and
# test figures one device's.
ON_TWO_WORKERS = {
    "nlp/text_classification_with_transformer.py": ("train_", "test_"),
    "nlp/bidirectional_lstm_imdb.py": ("train_", "test_"),
    "vision/autoencoder.py": ("train_", "test_"),
    "vision/edsr.py": ("test_",),
    "structured_data/feature_engineering_with_custom_layer.py": ("train_", "test_"),
}


def test_docs_zoo_lists_every_example_the_rule_selects_once():
    listed = catalog.recorded(PAGE.read_text())
    adapted = {catalog.source_of(path) for path in catalog.adapted()}
    left_out = {source for source, _ in catalog.left_out()}
    assert not adapted & left_out, sorted(adapted & left_out)
    assert set(listed) == adapted | left_out, sorted(set(listed) ^ (adapted | left_out))
    assert {s for s, status in listed.items() if status == "left out"} == left_out
    assert len(adapted) >= 60


@pytest.mark.zoo
@pytest.mark.parametrize(
    "path", catalog.ci_sample(PAGE.read_text()), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_an_adapted_example_ends_as_docs_zoo_says(path, tmp_path):
    expected = catalog.recorded(PAGE.read_text())[catalog.source_of(path)]
    out = tmp_path / "outcome.json"
    command = [sys.executable, "-m", "tests.zoo.one", str(path.relative_to(support.ROOT)), str(out)]
    done = support.run_processes(
        {"zoo": (command, support.environment())}, tmp_path / "logs", timeout=900
    )["zoo"]
    assert done.returncode == 0, done.tail()
    outcome = json.loads(out.read_text())
    assert outcome["status"] == expected, outcome


@pytest.mark.zoo
@pytest.mark.parametrize("example", ON_TWO_WORKERS)
def test_an_adapted_example_on_2_workers_trains_as_one_device(example, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_EXAMPLE", example)  # the workers inherit it
    wrapper = str(support.ROOT / "tests" / "zoo" / "without_dropout.py")
    cluster, one = two_workers_and_one_device(tmp_path, wrapper, 1, sync_batch_norm=True)
    expected = one.summary["history"][-1]
    figures = [k for k in expected if k.startswith(ON_TWO_WORKERS[example])]
    assert "test_loss" in figures, expected
    for key in figures:
        # The zoo's float64 bound (tests.zoo.one): the feature layer computes in float32.
        assert cluster["history"][-1][key] == pytest.approx(expected[key], abs=1e-6), key
