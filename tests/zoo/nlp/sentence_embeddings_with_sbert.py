# keras-io: examples/nlp/sentence_embeddings_with_sbert.py
"""Adapted: the example's first training (RegressionSiamese on STSB-like pairs, MSE,
Adam(2e-5), mixed_float16); a RobertaBackbone from a small config (2 layers, 2 heads,
hidden 32, intermediate 64) and a RobertaPreprocessor over a made-up byte-pair vocabulary
(sequence_length 16) in place of the roberta_base_en presets; synthetic sentence pairs
with similarity labels in [-1, 1] (STSB's [0, 5] through change_range) in place of
glue/stsb, as unbatched tf.data elements; the global mixed_float16 policy set only while
the model is built and compiled, then put back; the (batch, 1) strings squeezed to
(batch,) before the preprocessor (KerasHub 0.32 tokenizers take rank < 2 only);
RegressionSiamese registered with get_config/from_config for saving (from_config rebuilds it
under the saved policy, so the reloaded model compiles with a LossScaleOptimizer too); the
tokenizer a registered RobertaTokenizer subclass that builds its own vocabulary (load_model
traces the preprocessor inside the functional encoder before it loads the vocabulary
assets)."""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

LETTERS = "abcdefghijklmnopqrst"


@keras.saving.register_keras_serializable(package="zoo_sentence_embeddings_with_sbert")
class SmallRobertaTokenizer(keras_hub.models.RobertaTokenizer):
    """A RobertaTokenizer that knows its made-up vocabulary (so a reload can trace it)."""

    def __init__(self, **kwargs):
        kwargs.pop("vocabulary", None)
        kwargs.pop("merges", None)
        vocabulary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "Ġ": 4}
        for c in LETTERS:
            vocabulary[c] = len(vocabulary)
            vocabulary["Ġ" + c] = len(vocabulary)
        vocabulary["<mask>"] = len(vocabulary)
        merges = ["Ġ " + c for c in LETTERS]
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)


@keras.saving.register_keras_serializable(package="zoo_sentence_embeddings_with_sbert")
class RegressionSiamese(keras.Model):
    def __init__(self, encoder, **kwargs):
        inputs = keras.Input(shape=(2,), dtype="string", name="sentences")
        sen1, sen2 = keras.ops.split(inputs, 2, axis=1)
        u = encoder(sen1)
        v = encoder(sen2)
        cosine_similarity_scores = keras.ops.matmul(u, keras.ops.transpose(v))

        super().__init__(
            inputs=inputs,
            outputs=cosine_similarity_scores,
            **kwargs,
        )

        self.encoder = encoder

    def get_encoder(self):
        return self.encoder

    def get_config(self):
        return {
            "name": self.name,
            "dtype": self.dtype_policy.name,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        previous_policy = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(config.pop("dtype"))
        try:
            return cls(**config)
        finally:
            keras.mixed_precision.set_global_policy(previous_policy)


def build_model():
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        tokenizer = SmallRobertaTokenizer()
        preprocessor = keras_hub.models.RobertaPreprocessor(tokenizer=tokenizer, sequence_length=16)
        backbone = keras_hub.models.RobertaBackbone(
            vocabulary_size=tokenizer.vocabulary_size(),
            num_layers=2,
            num_heads=2,
            hidden_dim=32,
            intermediate_dim=64,
            max_sequence_length=16,
        )
        inputs = keras.Input(shape=(1,), dtype="string", name="sentence")
        x = preprocessor(keras.ops.squeeze(inputs, axis=1))
        h = backbone(x)
        embedding = keras.layers.GlobalAveragePooling1D(name="pooling_layer")(h, x["padding_mask"])
        n_embedding = keras.layers.UnitNormalization(axis=1)(embedding)
        roberta_normal_encoder = keras.Model(inputs=inputs, outputs=n_embedding)

        roberta_regression_siamese = RegressionSiamese(roberta_normal_encoder)

        roberta_regression_siamese.compile(
            loss=keras.losses.MeanSquaredError(),
            optimizer=keras.optimizers.Adam(2e-5),
            jit_compile=False,
        )
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    return roberta_regression_siamese


def change_range(x):
    return (x / 2.5) - 1


def _sentence(rng):
    return " ".join(rng.choice(list(LETTERS), size=rng.integers(3, 12)))


def _split(rng, n):
    sentences = np.array([[_sentence(rng), _sentence(rng)] for _ in range(n)])
    label = change_range(rng.uniform(0.0, 5.0, size=(n, 1))).astype("float32")
    return tf.data.Dataset.from_tensor_slices((sentences, label))


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
