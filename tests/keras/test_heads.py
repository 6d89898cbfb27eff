"""Loss weights, as Keras applies them."""

import pytest

from tests.keras.helpers import load
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config

# 256 test examples over a global batch of 2 x 48: the last batch is padded.
PADDED = Config(batch_size=48, epochs=2, seed=3, jit_compile=False, dtype="float64")


def test_one_output_with_a_loss_weight_reports_the_loss_keras_reports():
    task = load("binary_auc")
    build = task.build_model

    def build_model():
        model = build()
        model.compile(optimizer="sgd", loss="binary_crossentropy", loss_weights=3.0)
        return model

    task.build_model = build_model
    result = training.run(PADDED, task, strategy=cpu_strategy(2))
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = result.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    assert result.summary["test_loss"] == pytest.approx(keras_says["loss"], abs=1e-6)
