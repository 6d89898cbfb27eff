"""The MNIST tasks' export: uint8 images in, class probabilities out; read back and measured.

`save` writes both formats into a model dir at the end of training:

  model.keras    a Keras model: uint8 pixels (N, 28, 28), 0 to 255 as MNIST stores
                 them, in; class probabilities (N, 10) out. `keras.saving.load_model`
                 loads it with no custom objects. Its layer 'classifier' takes float32
                 pixels in [0, 1] instead (feeding floats to the model itself would
                 cast them to uint8).
  saved_model/   a SavedModel for TF Serving, with two signatures, each taking
                 `images` and returning {'probabilities': (N, 10) float32}:
                   serving_default (also 'serve'): uint8 (N, 28, 28)
                   serve_float:                    float32 (N, 28, 28) in [0, 1]

Both compute in float32 whatever dtype training used. `load` reads either
one back as a `Classifier`; `evaluate` measures one on a split under any
strategy.
"""

import functools
import os
import zipfile

import keras
import tensorflow as tf

from tf_mgpu.engine.input.data import Split
from tf_mgpu.engine.step import evaluation
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import export
from tf_mgpu.outputs.export import KERAS, SAVED_MODEL

CLASSIFIER = "classifier"  # the .keras model's layer that takes float pixels
OUTPUT = "probabilities"  # the SavedModel signatures' output
IMAGE_SHAPE = (28, 28)
SIGNATURES = {"serving_default": tf.uint8, "serve_float": tf.float32}
# A probability is clipped to this before its log: a confident mistake costs
# at most -log(1e-7) = 16.1, not infinity (Keras's own clip, keras.config.epsilon()).
MIN_PROBABILITY = 1e-7
_HELP = f"pass the --model_dir of a finished run, its {KERAS}, or its {SAVED_MODEL}/"


def save(model: keras.Model, model_dir: str) -> list[str]:
    """Writes `model` into `model_dir` as `model.keras` and `saved_model/`; returns their paths.

    `model` is the trained `tf_mgpu.tasks.mnist_mlp` network (float pixels
    in, logits out), from any strategy and dtype policy. Call it outside any
    strategy scope, on the chief only: it runs no collective (see
    `inference_model`). Each output is written under another name and renamed
    into place, so a killed run never leaves half an export; a previous
    export is replaced. Raises OSError if the disk refuses.
    """
    inference = inference_model(model)
    keras_path = export.write_keras(inference, model_dir)
    saved_path = os.path.join(model_dir, SAVED_MODEL)
    export.write_dir(
        saved_path, lambda folder: _archive(inference).write_out(folder, verbose=False)
    )
    return [keras_path, saved_path]


def inference_model(model: keras.Model) -> keras.Model:
    """A float32 copy of the trained `model`: uint8 pixels in, probabilities out.

    The layers are rebuilt from the trained ones' configs with dtype float32,
    whatever policy they trained under, and given the trained weights as
    NumPy arrays. The copy shares no variable with `model`, so neither
    building nor saving it involves the strategy `model` was built under:
    reading mirrored weights is local, and nothing waits for other workers.
    """
    if tf.distribute.has_strategy():
        raise RuntimeError(
            "export outside strategy.scope(): variables made inside it would be mirrored, "
            "and saving them collective"
        )
    shape = tuple(model.input_shape[1:])
    float32_layers = [
        type(layer).from_config({**layer.get_config(), "dtype": "float32"})
        for layer in model.layers
    ]
    classifier = keras.Sequential(
        [
            keras.Input(shape=shape, dtype="float32"),
            *float32_layers,
            keras.layers.Softmax(dtype="float32", name=OUTPUT),
        ],
        name=CLASSIFIER,
    )
    classifier.set_weights(model.get_weights())
    pixels = keras.Input(shape=shape, dtype="uint8", name="pixels")
    # x * (1/255) differs from training's x / 255 by at most one float32 ulp.
    scaled = keras.layers.Rescaling(1 / 255, dtype="float32", name="scale")(pixels)
    return keras.Model(pixels, classifier(scaled), name="mnist_classifier")


def _archive(inference: keras.Model) -> keras.export.ExportArchive:
    """The SavedModel's signatures (see the module's docstring), with explicit input specs."""
    archive = keras.export.ExportArchive()
    archive.track(inference)
    classifier = inference.get_layer(CLASSIFIER)
    # The first endpoint also becomes serving_default, TF Serving's default.
    for name, dtype, net in (
        ("serve", tf.uint8, inference),
        ("serve_float", tf.float32, classifier),
    ):
        archive.add_endpoint(
            name,
            functools.partial(_probabilities, net),
            input_signature=[tf.TensorSpec((None, *inference.input_shape[1:]), dtype, "images")],
        )
    return archive


def _probabilities(net: keras.Model, images: tf.Tensor) -> dict:
    return {OUTPUT: net(images, training=False)}


class Classifier:
    """An exported model read back: MNIST images in, class probabilities out.

    Call it with uint8 pixels (N, 28, 28), 0 to 255, or float pixels in
    [0, 1]; it returns float32 probabilities (N, 10). It works eagerly and
    inside `tf.function` and `strategy.run`; `load` it inside
    `strategy.scope()` to mirror its variables over the replicas.
    """

    def __init__(self, path: str, loaded, from_pixels, from_floats):
        self.path = path  # the file or folder read
        self.loaded = loaded  # the Keras model or restored SavedModel; keeps its variables alive
        self._from_pixels, self._from_floats = from_pixels, from_floats

    def __call__(self, images) -> tf.Tensor:
        images = tf.convert_to_tensor(images)
        if images.dtype.is_floating:
            return self._from_floats(tf.cast(images, tf.float32))
        return self._from_pixels(tf.cast(images, tf.uint8))


def locate(path: str) -> str:
    """What `load` reads for `path`: a .keras file or a SavedModel folder.

    `path` may be either, or a model dir holding them (the .keras model is
    read then). Raises UserError when it is none of these; cheap, so a
    command can check its input before it starts any work.
    """
    if os.path.isfile(path):
        if path.endswith(".keras"):
            return path
        raise UserError(f"--model={path} is a file but not a .keras model; {_HELP}")
    if not os.path.isdir(path):
        raise UserError(f"--model={path} does not exist; {_HELP}")
    if tf.saved_model.contains_saved_model(path):
        return path
    keras_path, saved_path = os.path.join(path, KERAS), os.path.join(path, SAVED_MODEL)
    if os.path.isfile(keras_path):
        return keras_path
    if tf.saved_model.contains_saved_model(saved_path):
        return saved_path
    raise UserError(
        f"--model={path} holds neither {KERAS} nor a SavedModel (did its run finish?); {_HELP}"
    )


def load(path: str) -> Classifier:
    """The exported model at `path` (see `locate`); UserError if it is not one `save` wrote."""
    found = locate(path)
    if found.endswith(".keras"):
        return _load_keras(found)
    return _load_saved_model(found)


def _load_keras(path: str) -> Classifier:
    try:
        model = keras.saving.load_model(path, compile=False)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise UserError(
            f"--model={path} cannot be read as a Keras model ({_first_line(e)})"
        ) from None
    takes = _input_of(model)
    if takes != ("uint8", (None, *IMAGE_SHAPE)) or CLASSIFIER not in (
        layer.name for layer in model.layers
    ):
        raise UserError(
            f"--model={path} is a Keras model but not one tf_mgpu exported (it takes "
            f"{' '.join(map(str, takes))}); {_HELP}"
        )
    floats = model.get_layer(CLASSIFIER)
    return Classifier(
        path,
        model,
        lambda images: model(images, training=False),
        lambda images: floats(images, training=False),
    )


def _input_of(model: keras.Model) -> tuple:
    """(dtype, shape) of a Keras model's one input; ('an unknown input',) for another model."""
    inputs = getattr(model, "inputs", None) or []  # a subclassed model has none to read
    if len(inputs) != 1:
        return ("an unknown input",)
    return (inputs[0].dtype, tuple(inputs[0].shape))


def _load_saved_model(path: str) -> Classifier:
    try:
        loaded = tf.saved_model.load(path)
    except (OSError, ValueError, tf.errors.OpError) as e:
        raise UserError(
            f"--model={path} cannot be read as a SavedModel ({_first_line(e)})"
        ) from None
    missing = [name for name in SIGNATURES if name not in loaded.signatures]
    if missing:
        raise UserError(
            f"--model={path} is a SavedModel without the signatures tf_mgpu exports "
            f"({', '.join(missing)} missing); {_HELP}"
        )
    pixels, floats = (loaded.signatures[name] for name in SIGNATURES)
    return Classifier(
        path,
        loaded,
        lambda images: pixels(images=images)[OUTPUT],
        lambda images: floats(images=images)[OUTPUT],
    )


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def cross_entropy(labels: tf.Tensor, probabilities: tf.Tensor) -> tf.Tensor:
    """Per-example -log p(label), with p clipped to at least MIN_PROBABILITY."""
    chosen = tf.gather(probabilities, tf.cast(labels, tf.int32), batch_dims=1)
    return -tf.math.log(tf.clip_by_value(chosen, MIN_PROBABILITY, 1.0))


class _Probabilities(keras.Model):
    """A SavedModel's float signature as a Keras model with no weights, compiled with the
    mean cross-entropy and the accuracy, so the trainer's evaluation step measures it."""

    def __init__(self, predict):
        super().__init__()
        self._predict = predict

    def call(self, images):
        return self._predict(images)


def evaluate(
    classifier: Classifier, strategy: tf.distribute.Strategy, split: Split, batch_size: int
) -> dict:
    """Mean cross-entropy and accuracy of `classifier` over every example of `split`,
    spread over the strategy's replicas (see `tf_mgpu.engine.step.evaluation`). Load
    `classifier` in `strategy.scope()`."""
    with strategy.scope():
        model = _Probabilities(classifier)
        model.compile(
            loss=cross_entropy, metrics=[keras.metrics.SparseCategoricalAccuracy("accuracy")]
        )
    return evaluation.evaluate(strategy, model, split, batch_size)
