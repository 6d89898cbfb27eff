"""keras.layers.Lambda: it trains like any layer; a Python lambda cannot go into model.keras
(Keras loads its bytecode only with safe_mode=False) and the export says what to write
instead; a function defined with def, or a small Layer subclass, gets model.keras."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import (
    FILES,
    assert_same_weights,
    load,
    one_and_two,
    serve,
    trained_and_exported,
)
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config


def test_a_lambda_layer_on_two_replicas_equals_one_device_and_keras_evaluate():
    task = load("lambda_layer")
    one, two = one_and_two(task)
    assert_same_weights(one, two, atol=1e-10)
    (_, _), (x_test, y_test) = task.load_data()
    keras_says = two.state.model.evaluate(
        x_test, y_test, batch_size=256, return_dict=True, verbose=0
    )
    for name in ("loss", "accuracy"):
        assert two.summary[f"test_{name}"] == pytest.approx(one.summary[f"test_{name}"], abs=1e-9)
        assert two.summary[f"test_{name}"] == pytest.approx(keras_says[name], abs=1e-6), name


def test_a_python_lambda_gets_a_saved_model_and_the_line_says_what_keras_needs(tmp_path, capsys):
    result, x = trained_and_exported("lambda_layer", tmp_path)
    lines = [s for s in capsys.readouterr().out.splitlines() if s.startswith("tf_mgpu export:")]
    (layer,) = [x for x in result.state.model.layers if isinstance(x, keras.layers.Lambda)]
    assert lines == [
        "tf_mgpu export: Sequential cannot be rebuilt from its config (Requested the "
        "deserialization of a `Lambda` layer whose `function` is a Python lambda); wrote "
        "saved_model/ and model.weights.h5 but no model.keras: "
        f"Lambda layer '{layer.name}' wraps a Python lambda, which Keras saves as bytecode "
        "that load_model refuses (safe_mode); define the function with def (decorated with "
        "@keras.saving.register_keras_serializable() for load_model to find it), or replace "
        "the Lambda by a small keras.layers.Layer subclass, to get model.keras"
    ]
    assert "get_config" not in lines[0]
    assert not (tmp_path / "model.keras").exists()
    trained = np.asarray(result.state.model(tf.constant(x), training=False))
    np.testing.assert_allclose(serve(tmp_path, x), trained, atol=1e-6)
    # What the line says of Keras: its own save writes the lambda, its load refuses it.
    result.state.model.save(tmp_path / "by_keras.keras")
    with pytest.raises(ValueError, match="whose `function` is a Python lambda"):
        keras.saving.load_model(tmp_path / "by_keras.keras")


LAYER = """

class WithSquares(keras.layers.Layer):
    def call(self, x):
        return with_squares(x)
"""

# The file as the line advises, and what load_model then needs from the user.
ADVISED = {
    "def": (lambda text: text.replace("NAMED = False", "NAMED = True"), ["with_squares"]),
    "def_registered": (
        lambda text: text.replace("NAMED = False", "NAMED = True").replace(
            "\ndef with_squares", "\n@keras.saving.register_keras_serializable()\ndef with_squares"
        ),
        [],
    ),
    "layer_subclass": (
        lambda text: text.replace("\n\ndef build_model", LAYER + "\n\ndef build_model").replace(
            "keras.layers.Lambda(function)", "WithSquares()"
        ),
        ["WithSquares"],
    ),
}


@pytest.mark.parametrize("advice", sorted(ADVISED))
def test_as_the_line_advises_the_export_writes_model_keras(advice, tmp_path):
    change, needed = ADVISED[advice]
    text = (FILES / "lambda_layer.py").read_text()
    changed = tmp_path / f"lambda_{advice}.py"
    changed.write_text(change(text))
    assert changed.read_text() != text
    model_dir = tmp_path / "model"
    config = Config(task=str(changed), batch_size=16, epochs=1, seed=3, model_dir=str(model_dir))
    result = training.run(config, strategy=cpu_strategy(2))
    assert result.summary["exports"] == [
        str(model_dir / "model.keras"),
        str(model_dir / "saved_model"),
    ]
    model = result.state.model  # it holds the task file's function or class load_model needs
    (_, _), (x_test, _) = load("lambda_layer").load_data()
    own = {name: find(model, name) for name in needed}
    reloaded = keras.saving.load_model(model_dir / "model.keras", custom_objects=own)
    trained = np.asarray(model(tf.constant(x_test), training=False))
    np.testing.assert_allclose(np.asarray(reloaded(tf.constant(x_test))), trained, atol=1e-6)


def find(model: keras.Model, name: str):
    """The user's function or class `name` that the trained model holds."""
    for layer in model.layers:
        if type(layer).__name__ == name:
            return type(layer)
        if getattr(getattr(layer, "function", None), "__name__", None) == name:
            return layer.function
    raise AssertionError(f"{name} is not in the model")
