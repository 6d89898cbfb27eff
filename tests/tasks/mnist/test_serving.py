"""The exported model: both formats reload and predict exactly as the trained model did."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy, subset
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import export as exports
from tf_mgpu.tasks.mnist import serving as export
from tf_mgpu.tasks.mnist_mlp import build_model

SMALL = Config(batch_size=32, epochs=1, learning_rate=0.1, seed=0)
# float32 end to end, but x * (1/255) is not always x / 255: a last-bit difference.
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def trained(mnist) -> keras.Model:
    """A model trained on two mirrored replicas, as the chief holds it after training."""
    return training.run(
        SMALL, strategy=cpu_strategy(2), datasets=subset(mnist, 2048, 10)
    ).state.model


@pytest.fixture(scope="module")
def model_dir(trained, tmp_path_factory) -> str:
    model_dir = str(tmp_path_factory.mktemp("export"))
    export.save(trained, model_dir)
    return model_dir


@pytest.fixture(scope="module")
def pixels(mnist) -> np.ndarray:
    return mnist.test.x[:500]


def probabilities(net: keras.Model, pixels: np.ndarray) -> np.ndarray:
    """What the trained network predicts, as training evaluates it: float pixels in [0, 1]."""
    logits = net(tf.constant(pixels, tf.float32) / 255.0, training=False)
    return keras.ops.convert_to_numpy(keras.ops.softmax(tf.cast(logits, tf.float32)))


def forward(weights: list[np.ndarray], pixels: np.ndarray) -> np.ndarray:
    """The network in NumPy float32, from its weights alone."""
    kernel1, bias1, kernel2, bias2 = weights
    x = pixels.reshape(len(pixels), -1).astype(np.float32) / np.float32(255)
    logits = np.maximum(x @ kernel1 + bias1, 0) @ kernel2 + bias2
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def test_save_writes_a_keras_file_and_a_saved_model_and_nothing_half_written(trained, tmp_path):
    paths = export.save(trained, str(tmp_path))
    assert paths == [str(tmp_path / "model.keras"), str(tmp_path / "saved_model")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.keras", "saved_model"]
    assert (tmp_path / "saved_model" / "saved_model.pb").is_file()


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("name", ["", "model.keras", "saved_model"], ids=["dir", "keras", "tf"])
def test_both_formats_reload_with_the_trained_models_probabilities(
    trained, model_dir, pixels, name, dtype
):
    path = f"{model_dir}/{name}" if name else model_dir
    classifier = export.load(path)
    images = pixels if dtype == "uint8" else pixels.astype(np.float32) / 255
    predicted = classifier(images).numpy()
    expected = probabilities(trained, pixels)
    assert predicted.dtype == np.float32
    np.testing.assert_allclose(predicted, expected, atol=TOLERANCE, rtol=0, err_msg=path)
    assert classifier.path.endswith(name or "model.keras"), classifier.path


def test_the_keras_file_needs_nothing_but_keras_and_takes_uint8(trained, model_dir, pixels):
    reloaded = keras.saving.load_model(f"{model_dir}/model.keras")
    assert reloaded.input.dtype == "uint8", reloaded.input
    predicted = keras.ops.convert_to_numpy(reloaded(pixels))
    np.testing.assert_allclose(predicted, probabilities(trained, pixels), atol=TOLERANCE, rtol=0)
    floats = reloaded.get_layer(export.CLASSIFIER)(pixels.astype(np.float32) / 255)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(floats), predicted, atol=TOLERANCE, rtol=0
    )


def test_the_saved_model_serves_uint8_by_default_and_float_by_name(trained, model_dir, pixels):
    loaded = tf.saved_model.load(f"{model_dir}/saved_model")
    expected = probabilities(trained, pixels)
    for name, dtype, images in [
        ("serving_default", tf.uint8, pixels),
        ("serve_float", tf.float32, pixels.astype(np.float32) / 255),
    ]:
        signature = loaded.signatures[name]
        spec = signature.structured_input_signature[1]["images"]
        assert (spec.dtype, spec.shape.as_list()) == (dtype, [None, 28, 28]), (name, spec)
        outputs = signature(images=tf.constant(images))
        assert list(outputs) == ["probabilities"], (name, list(outputs))
        predicted = outputs["probabilities"].numpy()
        np.testing.assert_allclose(predicted, expected, atol=TOLERANCE, rtol=0, err_msg=name)


def test_a_mixed_bfloat16_model_exports_as_float32(mnist, tmp_path):
    config = dataclasses.replace(SMALL, dtype="mixed_bfloat16")
    try:
        trained = training.run(config, strategy=cpu_strategy(1), datasets=subset(mnist, 1024, 10))
        export.save(trained.state.model, str(tmp_path))
        # Loading under the mixed policy too: the file's own dtypes decide.
        reloaded = keras.saving.load_model(tmp_path / "model.keras")
    finally:
        keras.config.set_dtype_policy("float32")
    layers = reloaded.get_layer(export.CLASSIFIER).layers
    assert {layer.compute_dtype for layer in layers} == {"float32"}, layers
    pixels = mnist.test.x[:200]
    expected = forward(trained.state.model.get_weights(), pixels)
    for classifier in (export.load(str(tmp_path / "model.keras")), export.load(str(tmp_path))):
        predicted = classifier(pixels).numpy()
        np.testing.assert_allclose(predicted, expected, atol=1e-5, rtol=0, err_msg=classifier.path)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(reloaded(pixels)), expected, atol=1e-5, rtol=0
    )


def test_a_second_save_replaces_the_first_and_its_leftovers(trained, mnist, tmp_path):
    (tmp_path / "saved_model.partial").mkdir()  # as a save killed midway leaves them
    (tmp_path / "partial.model.keras").write_text("half")
    export.save(trained, str(tmp_path))
    other = training.run(
        dataclasses.replace(SMALL, seed=1),
        strategy=cpu_strategy(1),
        datasets=subset(mnist, 256, 10),
    ).state.model
    export.save(other, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.keras", "saved_model"]
    pixels = mnist.test.x[:100]
    for path in (tmp_path / "model.keras", tmp_path / "saved_model"):
        predicted = export.load(str(path))(pixels).numpy()
        np.testing.assert_allclose(predicted, probabilities(other, pixels), atol=TOLERANCE, rtol=0)
    exports.remove(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_save_that_fails_keeps_the_previous_export_whole(
    trained, model_dir, tmp_path, monkeypatch
):
    export.save(trained, str(tmp_path))
    real_save = tf.saved_model.save

    def disk_full(obj, path, **kwargs):
        real_save(obj, path, **kwargs)
        (tmp_path / "saved_model.partial" / "saved_model.pb").write_bytes(b"trunc")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        export.save(trained, str(tmp_path))
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.keras", "saved_model"]
    pixels = np.zeros((1, 28, 28), np.uint8)
    np.testing.assert_array_equal(
        export.load(str(tmp_path / "saved_model"))(pixels).numpy(),
        export.load(f"{model_dir}/saved_model")(pixels).numpy(),
    )


def make_not_exported(path) -> str:
    """Writes something at `path` that is not an export, as `path`'s name says."""
    kind = path.name
    if kind == "empty_dir":
        path.mkdir()
    elif kind == "notes.txt":
        path.write_text("not a model")
    elif kind == "junk.keras":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    elif kind == "logits.keras":
        build_model().save(path)  # the training network: float pixels in, logits out
    elif kind == "module_saved_model":
        tf.saved_model.save(tf.Module(), str(path))
    return str(path)


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("missing", "does not exist"),
        ("empty_dir", "holds neither model.keras nor a SavedModel"),
        ("notes.txt", "is a file but not a .keras model"),
        ("junk.keras", "cannot be read as a Keras model"),
        ("logits.keras", "not one tf_mgpu exported (it takes float32 (None, 28, 28))"),
        ("module_saved_model", "without the signatures tf_mgpu exports"),
    ],
)
def test_paths_that_hold_no_export_are_one_line_user_errors(tmp_path, name, named):
    path = make_not_exported(tmp_path / name)
    with pytest.raises(UserError) as error:
        export.load(path)
    message = str(error.value)
    assert named in message, message
    assert f"--model={path}" in message, message
    assert "\n" not in message, message
