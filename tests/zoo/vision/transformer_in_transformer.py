# keras-io: examples/vision/transformer_in_transformer.py
"""Transformer in Transformer (TNT) on CIFAR-100: synthetic uint8 16x16x3 images with
one-hot labels over 100 classes in place of the download (32x32); image_size (32, 32) in
place of (96, 96) (patch_size 8 and first_stride 4 as written, so 4x4 patches of 2x2
pixels), outer and inner embedding dims 32 and 16 in place of 64 and 32,
num_transformer_layer 2 in place of 5; keras.optimizers.AdamW in place of
tfa.optimizers.AdamW (TensorFlow Addons is not installed); keras.ops.image.extract_patches
and keras.ops.reshape in place of tf.image.extract_patches and tf.reshape on symbolic
tensors (Keras 3 takes no raw tf op on a KerasTensor); PatchEncoder registered, taking
**kwargs, with a get_config, so that the saved model reloads; validation_split and the
plots left out."""

import math

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

num_classes = 100
input_shape = (16, 16, 3)

weight_decay = 0.0002
learning_rate = 0.001
label_smoothing = 0.1
batch_size = 128
image_size = (32, 32)  # resize images to this size
patch_size = (8, 8)
outer_block_embedding_dim = 32
inner_block_embedding_dim = 16
num_transformer_layer = 2
outer_block_num_heads = 4
inner_block_num_heads = 2
mlp_ratio = 4
attention_dropout = 0.5
projection_dropout = 0.5
first_stride = 4


def data_augmentation(inputs):
    x = layers.Rescaling(scale=1.0 / 255)(inputs)
    x = layers.Resizing(image_size[0], image_size[1])(x)
    x = layers.RandomFlip("horizontal")(x)
    x = layers.RandomRotation(factor=0.1)(x)
    x = layers.RandomContrast(factor=0.1)(x)
    x = layers.RandomZoom(height_factor=0.2, width_factor=0.2)(x)
    return x


@keras.saving.register_keras_serializable(package="zoo_transformer_in_transformer")
class PatchEncoder(layers.Layer):
    def __init__(self, num_patches, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patches = num_patches
        self.projection_dim = projection_dim
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def call(self, patch):
        positions = tf.range(start=0, limit=self.num_patches)
        encoded = self.projection(patch) + self.position_embedding(positions)
        return encoded

    def get_config(self):
        config = super().get_config()
        config.update({"num_patches": self.num_patches, "projection_dim": self.projection_dim})
        return config


def pixel_embed(x, image_size=image_size, patch_size=patch_size, in_dim=48, stride=4):
    _, channel, height, width = x.shape  # noqa: RUF059 (as in the example)
    num_patches = (image_size[0] // patch_size[0]) * (image_size[1] // patch_size[1])
    inner_patch_size = [math.ceil(ps / stride) for ps in patch_size]
    x = layers.Conv2D(in_dim, kernel_size=7, strides=stride, padding="same")(x)
    # pixel extraction
    x = ops.image.extract_patches(
        x,
        size=(inner_patch_size[0], inner_patch_size[1]),
        strides=(inner_patch_size[0], inner_patch_size[1]),
        dilation_rate=1,
        padding="valid",
    )
    x = ops.reshape(x, (-1, inner_patch_size[0] * inner_patch_size[1], in_dim))
    x = PatchEncoder(inner_patch_size[0] * inner_patch_size[1], in_dim)(x)
    return x, num_patches, inner_patch_size


def patch_embed(
    pixel_embedding,
    num_patches,
    outer_block_embedding_dim,
    inner_block_embedding_dim,
    num_pixels,
):
    patch_embedding = ops.reshape(
        pixel_embedding, (-1, num_patches, inner_block_embedding_dim * num_pixels)
    )
    patch_embedding = layers.LayerNormalization(epsilon=1e-5)(patch_embedding)
    patch_embedding = layers.Dense(outer_block_embedding_dim)(patch_embedding)
    patch_embedding = layers.LayerNormalization(epsilon=1e-5)(patch_embedding)
    patch_embedding = PatchEncoder(num_patches, outer_block_embedding_dim)(patch_embedding)
    patch_embedding = layers.Dropout(projection_dropout)(patch_embedding)
    return patch_embedding


def mlp(x, hidden_dim, output_dim, drop_rate=0.2):
    x = layers.Dense(hidden_dim, activation=tf.nn.gelu)(x)
    x = layers.Dropout(drop_rate)(x)
    x = layers.Dense(output_dim)(x)
    x = layers.Dropout(drop_rate)(x)
    return x


def transformer_in_transformer_block(
    pixel_embedding,
    patch_embedding,
    out_embedding_dim,
    in_embedding_dim,
    num_pixels,
    out_num_heads,
    in_num_heads,
    mlp_ratio,
    attention_dropout,
    projection_dropout,
):
    # inner transformer block
    residual_in_1 = pixel_embedding
    pixel_embedding = layers.LayerNormalization(epsilon=1e-5)(pixel_embedding)
    pixel_embedding = layers.MultiHeadAttention(
        num_heads=in_num_heads, key_dim=in_embedding_dim, dropout=attention_dropout
    )(pixel_embedding, pixel_embedding)
    pixel_embedding = layers.add([pixel_embedding, residual_in_1])
    residual_in_2 = pixel_embedding
    pixel_embedding = layers.LayerNormalization(epsilon=1e-5)(pixel_embedding)
    pixel_embedding = mlp(pixel_embedding, in_embedding_dim * mlp_ratio, in_embedding_dim)
    pixel_embedding = layers.add([pixel_embedding, residual_in_2])

    # outer transformer block
    _, num_patches, channel = patch_embedding.shape  # noqa: RUF059 (as in the example)
    # fuse local and global information
    fused_embedding = ops.reshape(pixel_embedding, (-1, num_patches, in_embedding_dim * num_pixels))
    fused_embedding = layers.LayerNormalization(epsilon=1e-5)(fused_embedding)
    fused_embedding = layers.Dense(out_embedding_dim)(fused_embedding)
    patch_embedding = layers.add([patch_embedding, fused_embedding])
    residual_out_1 = patch_embedding
    patch_embedding = layers.LayerNormalization(epsilon=1e-5)(patch_embedding)
    patch_embedding = layers.MultiHeadAttention(
        num_heads=out_num_heads, key_dim=out_embedding_dim, dropout=attention_dropout
    )(patch_embedding, patch_embedding)
    patch_embedding = layers.add([patch_embedding, residual_out_1])
    residual_out_2 = patch_embedding
    patch_embedding = layers.LayerNormalization(epsilon=1e-5)(patch_embedding)
    patch_embedding = mlp(patch_embedding, out_embedding_dim * mlp_ratio, out_embedding_dim)
    patch_embedding = layers.add([patch_embedding, residual_out_2])
    return pixel_embedding, patch_embedding


def get_model(
    image_size=image_size,
    patch_size=patch_size,
    outer_block_embedding_dim=outer_block_embedding_dim,
    inner_block_embedding_dim=inner_block_embedding_dim,
    num_transformer_layer=num_transformer_layer,
    outer_block_num_heads=outer_block_num_heads,
    inner_block_num_heads=inner_block_num_heads,
    mlp_ratio=mlp_ratio,
    attention_dropout=attention_dropout,
    projection_dropout=projection_dropout,
    first_stride=first_stride,
):
    inputs = layers.Input(shape=input_shape)
    # Image augment
    x = data_augmentation(inputs)
    # extract pixel embedding
    pixel_embedding, num_patches, inner_patch_size = pixel_embed(
        x, image_size, patch_size, inner_block_embedding_dim, first_stride
    )
    num_pixels = inner_patch_size[0] * inner_patch_size[1]
    # extract patch embedding
    patch_embedding = patch_embed(
        pixel_embedding,
        num_patches,
        outer_block_embedding_dim,
        inner_block_embedding_dim,
        num_pixels,
    )
    # create multiple layers of the TNT block.
    for _ in range(num_transformer_layer):
        pixel_embedding, patch_embedding = transformer_in_transformer_block(
            pixel_embedding,
            patch_embedding,
            outer_block_embedding_dim,
            inner_block_embedding_dim,
            num_pixels,
            outer_block_num_heads,
            inner_block_num_heads,
            mlp_ratio,
            attention_dropout,
            projection_dropout,
        )
    patch_embedding = layers.LayerNormalization(epsilon=1e-5)(patch_embedding)
    x = layers.GlobalAvgPool1D()(patch_embedding)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = get_model()
    model.compile(
        loss=keras.losses.CategoricalCrossentropy(label_smoothing=label_smoothing),
        optimizer=keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay),
        metrics=[
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(5, name="top-5-accuracy"),
        ],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, *input_shape)).astype("uint8")
        y = keras.utils.to_categorical(rng.integers(0, num_classes, size=(n, 1)), num_classes)
        return x, y

    return split(128), split(64)
