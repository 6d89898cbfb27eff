# keras-io: examples/vision/video_transformers.py
"""The hybrid Transformer video classifier on UCF101 top-5: synthetic float32 frame features
(non-negative, as DenseNet121's pooled features are; videos shorter than MAX_SEQ_LENGTH
zero-padded at the end, so the example's compute_mask masks them) with string tags of the
five UCF101 top-5 classes turned into int64 labels of shape (n, 1) by the example's own
StringLookup, in place of the prepared .npy download and the ImageNet DenseNet121 feature
extractor (inference only there); NUM_FEATURES 64 in place of 1024 (MAX_SEQ_LENGTH 20 as
written); layers.experimental.preprocessing.StringLookup written as layers.StringLookup;
keras.ops.any and keras.ops.cast in place of tf.reduce_any and tf.cast in compute_mask
(Keras 3 calls it on the symbolic KerasTensor, which takes no raw tf op);
PositionalEmbedding and TransformerEncoder registered with a get_config so that the saved
model reloads; validation_split and the checkpoint callback (it writes a file) left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_video_transformers"

MAX_SEQ_LENGTH = 20
NUM_FEATURES = 64

TAGS = ["CricketShot", "PlayingCello", "Punch", "ShavingBeard", "TennisSwing"]

# Label preprocessing with StringLookup.
label_processor = layers.StringLookup(
    num_oov_indices=0, vocabulary=np.unique(TAGS), mask_token=None
)


@keras.saving.register_keras_serializable(package=PACKAGE)
class PositionalEmbedding(layers.Layer):
    def __init__(self, sequence_length, output_dim, **kwargs):
        super().__init__(**kwargs)
        self.position_embeddings = layers.Embedding(
            input_dim=sequence_length, output_dim=output_dim
        )
        self.sequence_length = sequence_length
        self.output_dim = output_dim

    def call(self, inputs):
        # The inputs are of shape: `(batch_size, frames, num_features)`
        length = tf.shape(inputs)[1]
        positions = tf.range(start=0, limit=length, delta=1)
        embedded_positions = self.position_embeddings(positions)
        return inputs + embedded_positions

    def compute_mask(self, inputs, mask=None):
        mask = keras.ops.any(keras.ops.cast(inputs, "bool"), axis=-1)
        return mask

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length, "output_dim": self.output_dim})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerEncoder(layers.Layer):
    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.num_heads = num_heads
        self.attention = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_dim, dropout=0.3
        )
        self.dense_proj = keras.Sequential(
            [
                layers.Dense(dense_dim, activation=tf.nn.gelu),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()

    def call(self, inputs, mask=None):
        if mask is not None:
            mask = mask[:, tf.newaxis, :]

        attention_output = self.attention(inputs, inputs, attention_mask=mask)
        proj_input = self.layernorm_1(inputs + attention_output)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"embed_dim": self.embed_dim, "dense_dim": self.dense_dim, "num_heads": self.num_heads}
        )
        return config


def get_compiled_model():
    sequence_length = MAX_SEQ_LENGTH
    embed_dim = NUM_FEATURES
    dense_dim = 4
    num_heads = 1
    classes = len(label_processor.get_vocabulary())

    inputs = keras.Input(shape=(None, None))
    x = PositionalEmbedding(sequence_length, embed_dim, name="frame_position_embedding")(inputs)
    x = TransformerEncoder(embed_dim, dense_dim, num_heads, name="transformer_layer")(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    model = keras.Model(inputs, outputs)

    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def build_model():
    return get_compiled_model()


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        lengths = rng.integers(1, MAX_SEQ_LENGTH + 1, size=n)
        frame_masks = np.arange(MAX_SEQ_LENGTH)[None, :] < lengths[:, None]
        frame_features = rng.random((n, MAX_SEQ_LENGTH, NUM_FEATURES), dtype="float32")
        frame_features *= frame_masks[..., None]
        labels = np.array(TAGS)[rng.integers(0, len(TAGS), size=n)]
        labels = label_processor(labels[..., None]).numpy()
        return frame_features, labels

    return split(128), split(64)
