# keras-io: examples/vision/segmentation_transformer.py
"""SETR (progressive-upsampling decoder) on synthetic People-Clothing-shaped data (images
in [0, 1], float32 masks with classes 0-58) in place of the download; image side 256 ->
32 (the patch stays 16, so the four 2x upsamplings still reach full resolution),
Transformer layers 8 -> 2, heads 6 -> 2, dim 128 -> 16; tensorflow_addons AdamW ->
keras.optimizers.AdamW (same settings); Keras 3 API: keras.ops.reshape for tf.reshape on a
symbolic tensor; PatchExtract and PatchEmbedding given get_config and registered for
saving."""

import keras
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

PACKAGE = "zoo_segmentation_transformer"

weight_decay = 0.0001
learning_rate = 0.001
num_epochs = 50

image_size = 32
num_classes = 59


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchExtract(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def get_config(self):
        config = super().get_config()
        config.update({"patch_size": self.patch_size})
        return config

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=(1, self.patch_size, self.patch_size, 1),
            strides=(1, self.patch_size, self.patch_size, 1),
            rates=(1, 1, 1, 1),
            padding="VALID",
        )
        patch_dim = patches.shape[-1]
        patch_num = patches.shape[1]
        return tf.reshape(patches, (batch_size, patch_num * patch_num, patch_dim))


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchEmbedding(layers.Layer):
    def __init__(self, num_patch, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patch = num_patch
        self.embed_dim = embed_dim
        self.proj = layers.Dense(embed_dim)
        self.pos_embed = layers.Embedding(input_dim=num_patch, output_dim=embed_dim)

    def get_config(self):
        config = super().get_config()
        config.update({"num_patch": self.num_patch, "embed_dim": self.embed_dim})
        return config

    def call(self, patch):
        pos = tf.range(start=0, limit=self.num_patch, delta=1)
        return self.proj(patch) + self.pos_embed(pos)


def mlp(x, hidden_dim, out_dim, drop=0):
    x = layers.Dense(hidden_dim, activation=tf.nn.gelu)(x)
    x = layers.Dropout(drop)(x)
    x = layers.Dense(out_dim)(x)
    return x


def transformer_layer(x, dim, num_heads, mlp_ratio=4, attention_dropout=0, projection_dropout=0):
    residual_1 = x
    x = layers.LayerNormalization(epsilon=1e-5)(x)
    x = layers.MultiHeadAttention(num_heads=num_heads, key_dim=dim, dropout=attention_dropout)(x, x)
    x = layers.add([x, residual_1])
    residual_2 = x
    x = layers.LayerNormalization(epsilon=1e-5)(x)
    x = mlp(x, dim * mlp_ratio, dim)
    x = layers.add([x, residual_2])
    return x


def segmentation_transformer(
    num_transformer_layer=2,
    image_size=image_size,
    patch_size=16,
    num_heads=2,
    dim=16,
    num_classes=num_classes,
):
    inputs = layers.Input(shape=(image_size, image_size, 3))
    num_patches = (image_size // patch_size) ** 2
    x = PatchExtract(patch_size)(inputs)
    x = PatchEmbedding(num_patches, dim)(x)
    # encoder
    for _ in range(num_transformer_layer):
        x = transformer_layer(
            x,
            dim,
            num_heads,
            mlp_ratio=4,
            attention_dropout=0.2,
            projection_dropout=0.2,
        )
    x = keras.ops.reshape(x, (-1, image_size // patch_size, image_size // patch_size, dim))
    # decoder
    x = layers.Conv2D(dim, kernel_size=3, strides=1, padding="same", activation="relu")(x)
    x = layers.UpSampling2D(size=(2, 2), interpolation="bilinear")(x)  # x-->(H/8, W/8, dim)

    x = layers.Conv2D(dim, kernel_size=3, strides=1, padding="same", activation="relu")(x)
    x = layers.UpSampling2D(size=(2, 2), interpolation="bilinear")(x)  # x-->(H/4, W/4, dim)

    x = layers.Conv2D(dim, kernel_size=3, strides=1, padding="same", activation="relu")(x)
    x = layers.UpSampling2D(size=(2, 2), interpolation="bilinear")(x)  # x-->(H/2, W/2, dim)

    x = layers.Conv2D(dim, kernel_size=3, strides=1, padding="same", activation="relu")(x)
    x = layers.UpSampling2D(size=(2, 2), interpolation="bilinear")(x)  # x-->(H, W, dim)

    outputs = layers.Conv2D(num_classes, kernel_size=1, strides=1, padding="same")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = segmentation_transformer()
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 1, size=(n, image_size, image_size, 3)).astype("float32")
        masks = rng.integers(0, num_classes, size=(n, image_size, image_size, 1))
        return images, masks.astype("float32")

    return split(128), split(64)
