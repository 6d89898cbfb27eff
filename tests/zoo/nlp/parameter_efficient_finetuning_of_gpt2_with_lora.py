# keras-io: examples/nlp/parameter_efficient_finetuning_of_gpt2_with_lora.py
"""Adapted: the example's LoRA GPT-2 training (its LoraLayer on the query and value
projections, everything else frozen, AdamW with the example's settings and weight-decay
exclusions, mixed_float16); a GPT2Backbone from a small config (2 layers, 2 heads, hidden
32, intermediate 64) and a GPT2CausalLMPreprocessor over a made-up byte-pair vocabulary
(MAX_SEQUENCE_LENGTH 128 -> 32) in place of the gpt2_base_en presets; synthetic documents
in place of reddit_tifu, as unbatched tf.data string elements (fit(x) without labels: the
preprocessor makes the labels and the padding-mask sample weights); the global
mixed_float16 policy set only while the model is built and compiled, then put back; the
example's LoRA injection, build pass and freezing loop moved into the __init__ of a
registered GPT2CausalLM subclass (and the build pass fed token ids), so that
keras.saving.load_model rebuilds the same layers, with the attention layer's state tracker
unlocked around each assignment (Keras 3 refuses new sub-layers on a built layer); the
tokenizer a registered GPT2Tokenizer
subclass that builds its own vocabulary; LoraLayer registered with get_config; the GPU
memory callback left out (it reads GPU:0 memory and does not change training)."""

import math

import keras
import keras_hub
import numpy as np
import tensorflow as tf

PACKAGE = "zoo_parameter_efficient_finetuning_of_gpt2_with_lora"

MAX_SEQUENCE_LENGTH = 32

# LoRA-specific hyperparameters
RANK = 4
ALPHA = 32.0

LETTERS = "abcdefghijklmnopqrst"


@keras.saving.register_keras_serializable(package=PACKAGE)
class SmallGPT2Tokenizer(keras_hub.models.GPT2Tokenizer):
    """A GPT2Tokenizer that knows its made-up vocabulary (so a reload can rebuild it)."""

    def __init__(self, **kwargs):
        kwargs.pop("vocabulary", None)
        kwargs.pop("merges", None)
        vocabulary = {"<|endoftext|>": 0, "Ġ": 1}
        for c in LETTERS:
            vocabulary[c] = len(vocabulary)
            vocabulary["Ġ" + c] = len(vocabulary)
        merges = ["Ġ " + c for c in LETTERS]
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)


@keras.saving.register_keras_serializable(package=PACKAGE)
class LoraLayer(keras.layers.Layer):
    def __init__(
        self,
        original_layer,
        rank=8,
        alpha=32,
        layer_idx=0,
        trainable=False,
        **kwargs,
    ):
        # We want to keep the name of this layer the same as the original
        # dense layer.
        original_layer_config = original_layer.get_config()
        name = original_layer_config["name"]

        kwargs.pop("name", None)

        super().__init__(name=name, trainable=trainable, **kwargs)

        self.rank = rank
        self.alpha = alpha
        self.layer_idx = layer_idx

        self._scale = alpha / rank

        self._num_heads = original_layer_config["output_shape"][-2]
        self._hidden_dim = self._num_heads * original_layer_config["output_shape"][-1]

        # Layers.

        # Original dense layer.
        self.original_layer = original_layer
        # No matter whether we are training the model or are in inference mode,
        # this layer should be frozen.
        self.original_layer.trainable = False

        # LoRA dense layers.
        self.A = keras.layers.Dense(
            units=rank,
            use_bias=False,
            # Note: the original paper mentions that normal distribution was
            # used for initialization. However, the official LoRA implementation
            # uses "Kaiming/He Initialization".
            kernel_initializer=keras.initializers.VarianceScaling(
                scale=math.sqrt(5), mode="fan_in", distribution="uniform"
            ),
            trainable=trainable,
            name=f"A_{layer_idx}",
        )
        # B has the same `equation` and `output_shape` as the original layer.
        # `equation = abc,cde->abde`, where `a`: batch size, `b`: sequence
        # length, `c`: `hidden_dim`, `d`: `num_heads`,
        # `e`: `hidden_dim//num_heads`. The only difference is that in layer `B`,
        # `c` represents `rank`.
        self.B = keras.layers.EinsumDense(
            equation=original_layer_config["equation"],
            output_shape=original_layer_config["output_shape"],
            kernel_initializer="zeros",
            trainable=trainable,
            name=f"B_{layer_idx}",
        )

    def call(self, inputs):
        original_output = self.original_layer(inputs)
        if self.trainable:
            # If we are fine-tuning the model, we will add LoRA layers' output
            # to the original layer's output.
            lora_output = self.B(self.A(inputs)) * self._scale
            return original_output + lora_output

        # If we are in inference mode, we "merge" the LoRA layers' weights into
        # the original layer's weights - more on this in the text generation
        # section!
        return original_output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "original_layer": keras.saving.serialize_keras_object(self.original_layer),
                "rank": self.rank,
                "alpha": self.alpha,
                "layer_idx": self.layer_idx,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["original_layer"] = keras.saving.deserialize_keras_object(config["original_layer"])
        return cls(**config)


@keras.saving.register_keras_serializable(package=PACKAGE)
class LoraGPT2CausalLM(keras_hub.models.GPT2CausalLM):
    """GPT2CausalLM with the example's LoRA injection, build pass and freezing loop."""

    def __init__(self, backbone, preprocessor=None, rank=RANK, alpha=ALPHA, **kwargs):
        super().__init__(backbone=backbone, preprocessor=preprocessor, **kwargs)
        self.rank = rank
        self.alpha = alpha
        lora_model = self

        previous_policy = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(backbone.dtype_policy)
        try:
            gpt2_backbone_layer_name = [  # noqa: RUF015 (as in the example)
                layer.name for layer in list(lora_model.layers) if "GPT2Backbone" in str(layer)
            ][0]

            for layer_idx in range(lora_model.get_layer(gpt2_backbone_layer_name).num_layers):
                # Change query dense layer.
                # (Keras 3 locks a built layer's state: unlock it for the assignment.)
                lora_model.get_layer(gpt2_backbone_layer_name).get_layer(
                    f"transformer_layer_{layer_idx}"
                )._self_attention_layer._tracker.unlock()
                original_query_layer = (
                    lora_model.get_layer(gpt2_backbone_layer_name)
                    .get_layer(f"transformer_layer_{layer_idx}")
                    ._self_attention_layer._query_dense
                )

                (
                    lora_model.get_layer(gpt2_backbone_layer_name)
                    .get_layer(f"transformer_layer_{layer_idx}")
                    ._self_attention_layer._query_dense
                ) = LoraLayer(
                    original_query_layer,
                    rank=rank,
                    alpha=alpha,
                    layer_idx=layer_idx,
                    trainable=True,
                )

                # Change value dense layer.
                # (Keras 3 locks a built layer's state: unlock it for the assignment.)
                lora_model.get_layer(gpt2_backbone_layer_name).get_layer(
                    f"transformer_layer_{layer_idx}"
                )._self_attention_layer._tracker.unlock()
                original_value_layer = (
                    lora_model.get_layer(gpt2_backbone_layer_name)
                    .get_layer(f"transformer_layer_{layer_idx}")
                    ._self_attention_layer._value_dense
                )

                (
                    lora_model.get_layer(gpt2_backbone_layer_name)
                    .get_layer(f"transformer_layer_{layer_idx}")
                    ._self_attention_layer._value_dense
                ) = LoraLayer(
                    original_value_layer,
                    rank=rank,
                    alpha=alpha,
                    layer_idx=layer_idx,
                    trainable=True,
                )
                lora_model.get_layer(gpt2_backbone_layer_name).get_layer(
                    f"transformer_layer_{layer_idx}"
                )._self_attention_layer._tracker.lock()

            # A forward pass to build the LoRA layers (the example feeds a preprocessed
            # sentence; token ids of the same shape here).
            lora_model(
                {
                    "token_ids": np.zeros((1, MAX_SEQUENCE_LENGTH), "int32"),
                    "padding_mask": np.ones((1, MAX_SEQUENCE_LENGTH), "int32"),
                }
            )
        finally:
            keras.mixed_precision.set_global_policy(previous_policy)

        # Freeze the entire LLM, only the LoRA layers should be trainable.
        for l in lora_model._flatten_layers():  # noqa: E741 (as in the example)
            lst_of_layers = list(l._flatten_layers())

            if len(lst_of_layers) == 1:  # "leaves of the model"
                if "A_" in l.name or "B_" in l.name:
                    l.trainable = True
                else:
                    l.trainable = False

    def get_config(self):
        config = super().get_config()
        config.update({"rank": self.rank, "alpha": self.alpha})
        return config


def build_model():
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(keras.mixed_precision.Policy("mixed_float16"))
    try:
        tokenizer = SmallGPT2Tokenizer()
        preprocessor = keras_hub.models.GPT2CausalLMPreprocessor(
            tokenizer=tokenizer,
            sequence_length=MAX_SEQUENCE_LENGTH,
        )
        backbone = keras_hub.models.GPT2Backbone(
            vocabulary_size=tokenizer.vocabulary_size(),
            num_layers=2,
            num_heads=2,
            hidden_dim=32,
            intermediate_dim=64,
            max_sequence_length=MAX_SEQUENCE_LENGTH,
        )
        lora_model = LoraGPT2CausalLM(backbone=backbone, preprocessor=preprocessor)

        optimizer = keras.optimizers.AdamW(
            learning_rate=5e-5,
            weight_decay=0.01,
            epsilon=1e-6,
            global_clipnorm=1.0,  # Gradient clipping.
        )
        # Exclude layernorm and bias terms from weight decay.
        optimizer.exclude_from_weight_decay(var_names=["bias"])
        optimizer.exclude_from_weight_decay(var_names=["gamma"])
        optimizer.exclude_from_weight_decay(var_names=["beta"])

        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        lora_model.compile(
            optimizer=optimizer,
            loss=loss,
            weighted_metrics=["accuracy"],
        )
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    return lora_model


def _documents(rng, n):
    return np.array(
        [" ".join(rng.choice(list(LETTERS), size=rng.integers(8, 48))) for _ in range(n)]
    )


def load_data():
    rng = np.random.default_rng(0)
    train = tf.data.Dataset.from_tensor_slices(_documents(rng, 128))
    test = tf.data.Dataset.from_tensor_slices(_documents(rng, 64))
    return train, test
