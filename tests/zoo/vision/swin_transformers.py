# keras-io: examples/vision/swin_transformers.py
"""Swin Transformer on CIFAR-100: synthetic float 16x16x3 images in [0, 1] with one-hot labels
over 100 classes in place of the download (32x32); embed_dim 32, num_heads 4 and num_mlp 64
in place of 64, 8 and 256 (patch_size 2 and window_size 2 as written, so 8x8 patches in
place of 16x16); tensorflow.python.keras' GlobalAveragePooling1D and tf.initializers.Zeros
written as keras.layers.GlobalAveragePooling1D and keras.initializers.Zeros; the relative
position index a non-trainable add_weight and the attention mask a keras.Variable in place
of tf.Variables (Keras 3 does not track a raw tf.Variable on a layer, nor creates a
keras.Variable while a layer is built inside another's call); DropPath's rank len(x.shape)
in place of len(tf.shape(x)) (TensorFlow 2.21 refuses len() of a symbolic tensor); every
layer registered, with **kwargs and a get_config, so that the saved model reloads;
validation_split and the plots left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_swin_transformers"

num_classes = 100
input_shape = (16, 16, 3)

patch_size = (2, 2)  # 2-by-2 sized patches
drop_rate = 0.01  # Dropout rate
num_heads = 4  # Attention heads
embed_dim = 32  # Embedded dimensions
num_mlp = 64  # MLP nodes
qkv_bias = (
    True  # Convert embedded patches to query, key, and values with a learnable additive value
)
window_size = 2  # Size of attention window
shift_size = 1  # Size of shifting

num_patch_x = input_shape[0] // patch_size[0]
num_patch_y = input_shape[1] // patch_size[1]

learning_rate = 1e-4
clipvalue = 0.5
batch_size = 32


def window_partition(x, window_size):
    _, H, W, C = x.get_shape().as_list()  # noqa: N806 (as in the example)
    patch_num_H = H // window_size  # noqa: N806 (as in the example)
    patch_num_W = W // window_size  # noqa: N806 (as in the example)
    x = tf.reshape(x, shape=(-1, patch_num_H, window_size, patch_num_W, window_size, C))
    x = tf.transpose(x, (0, 1, 3, 2, 4, 5))
    windows = tf.reshape(x, shape=(-1, window_size, window_size, C))
    return windows


def window_reverse(windows, window_size, H, W, C):  # noqa: N803 (as in the example)
    patch_num_H = H // window_size  # noqa: N806 (as in the example)
    patch_num_W = W // window_size  # noqa: N806 (as in the example)
    x = tf.reshape(windows, shape=(-1, patch_num_H, patch_num_W, window_size, window_size, C))
    x = tf.transpose(x, perm=(0, 1, 3, 2, 4, 5))
    x = tf.reshape(x, shape=(-1, H, W, C))
    return x


@keras.saving.register_keras_serializable(package=PACKAGE)
class DropPath(layers.Layer):
    def __init__(self, drop_prob=None, **kwargs):
        super().__init__(**kwargs)
        self.drop_prob = drop_prob

    def call(self, x):
        input_shape = tf.shape(x)
        batch_num = input_shape[0]
        rank = len(x.shape)
        shape = (batch_num,) + (1,) * (rank - 1)
        random_tensor = (1 - self.drop_prob) + tf.random.uniform(shape, dtype=x.dtype)
        path_mask = tf.floor(random_tensor)
        output = tf.math.divide(x, 1 - self.drop_prob) * path_mask
        return output

    def get_config(self):
        config = super().get_config()
        config.update({"drop_prob": self.drop_prob})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class Mlp(layers.Layer):
    def __init__(self, filter_num, drop=0.0, **kwargs):
        super().__init__(**kwargs)
        self.filter_num = filter_num
        self.drop = drop
        self.net = keras.Sequential(
            [
                layers.Dense(filter_num[0]),
                layers.Activation(keras.activations.gelu),
                layers.Dropout(drop),
                layers.Dense(filter_num[1]),
                layers.Dropout(drop),
            ]
        )

    def call(self, x):
        return self.net(x)

    def get_config(self):
        config = super().get_config()
        config.update({"filter_num": self.filter_num, "drop": self.drop})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class WindowAttention(layers.Layer):
    def __init__(self, dim, window_size, num_heads, qkv_bias=True, drop_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        self.qkv_bias = qkv_bias
        self.drop_rate = drop_rate
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = layers.Dense(dim * 3, use_bias=qkv_bias)
        self.dropout = layers.Dropout(drop_rate)
        self.proj = layers.Dense(dim)

    def build(self, input_shape):
        num_window_elements = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        self.relative_position_bias_table = self.add_weight(
            shape=(num_window_elements, self.num_heads),
            initializer=keras.initializers.Zeros(),
            trainable=True,
        )
        coords_h = np.arange(self.window_size[0])
        coords_w = np.arange(self.window_size[1])
        coords_matrix = np.meshgrid(coords_h, coords_w, indexing="ij")
        coords = np.stack(coords_matrix)
        coords_flatten = coords.reshape(2, -1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.transpose([1, 2, 0])
        relative_coords[:, :, 0] += self.window_size[0] - 1
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1)

        self.relative_position_index = self.add_weight(
            shape=relative_position_index.shape,
            initializer=keras.initializers.Constant(relative_position_index),
            dtype="int32",
            trainable=False,
        )

    def call(self, x, mask=None):
        _, N, C = x.get_shape().as_list()  # noqa: N806 (as in the example)
        head_dim = C // self.num_heads
        x_qkv = self.qkv(x)
        x_qkv = tf.reshape(x_qkv, shape=(-1, N, 3, self.num_heads, head_dim))
        x_qkv = tf.transpose(x_qkv, perm=(2, 0, 3, 1, 4))
        q, k, v = x_qkv[0], x_qkv[1], x_qkv[2]
        q = q * self.scale
        k = tf.transpose(k, perm=(0, 1, 3, 2))
        attn = q @ k

        num_window_elements = self.window_size[0] * self.window_size[1]
        relative_position_index_flat = tf.reshape(self.relative_position_index, shape=(-1,))
        relative_position_bias = tf.gather(
            self.relative_position_bias_table, relative_position_index_flat
        )
        relative_position_bias = tf.reshape(
            relative_position_bias, shape=(num_window_elements, num_window_elements, -1)
        )
        relative_position_bias = tf.transpose(relative_position_bias, perm=(2, 0, 1))
        attn = attn + tf.expand_dims(relative_position_bias, axis=0)

        if mask is not None:
            nW = mask.get_shape()[0]  # noqa: N806 (as in the example)
            mask_float = tf.cast(tf.expand_dims(tf.expand_dims(mask, axis=1), axis=0), tf.float32)
            attn = tf.reshape(attn, shape=(-1, nW, self.num_heads, N, N)) + mask_float
            attn = tf.reshape(attn, shape=(-1, self.num_heads, N, N))
            attn = keras.activations.softmax(attn, axis=-1)
        else:
            attn = keras.activations.softmax(attn, axis=-1)
        attn = self.dropout(attn)

        x_qkv = attn @ v
        x_qkv = tf.transpose(x_qkv, perm=(0, 2, 1, 3))
        x_qkv = tf.reshape(x_qkv, shape=(-1, N, C))
        x_qkv = self.proj(x_qkv)
        x_qkv = self.dropout(x_qkv)
        return x_qkv

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "dim": self.dim,
                "window_size": self.window_size,
                "num_heads": self.num_heads,
                "qkv_bias": self.qkv_bias,
                "drop_rate": self.drop_rate,
            }
        )
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class SwinTransformer(layers.Layer):
    def __init__(
        self,
        dim,
        num_patch,
        num_heads,
        window_size=7,
        shift_size=0,
        num_mlp=1024,
        qkv_bias=True,
        drop_rate=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.config_arguments = {
            "dim": dim,
            "num_patch": num_patch,
            "num_heads": num_heads,
            "window_size": window_size,
            "shift_size": shift_size,
            "num_mlp": num_mlp,
            "qkv_bias": qkv_bias,
            "drop_rate": drop_rate,
        }

        self.dim = dim  # number of input dimensions
        self.num_patch = num_patch  # number of embedded patches
        self.num_heads = num_heads  # number of attention heads
        self.window_size = window_size  # size of window
        self.shift_size = shift_size  # size of window shift
        self.num_mlp = num_mlp  # number of MLP nodes

        self.norm1 = layers.LayerNormalization(epsilon=1e-5)
        self.attn = WindowAttention(
            dim,
            window_size=(self.window_size, self.window_size),
            num_heads=num_heads,
            qkv_bias=qkv_bias,
            drop_rate=drop_rate,
        )
        self.drop_path = DropPath(drop_rate)
        self.norm2 = layers.LayerNormalization(epsilon=1e-5)
        self.mlp = Mlp([num_mlp, dim], drop=drop_rate)
        if min(self.num_patch) < self.window_size:
            self.shift_size = 0
            self.window_size = min(self.num_patch)

    def build(self, input_shape):
        if self.shift_size > 0:
            H, W = self.num_patch  # noqa: N806 (as in the example)
            h_slices = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            w_slices = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            mask_array = np.zeros((1, H, W, 1))
            count = 0
            for h in h_slices:
                for w in w_slices:
                    mask_array[:, h, w, :] = count
                    count += 1
            mask_array = tf.convert_to_tensor(mask_array)

            # mask array to windows
            mask_windows = window_partition(mask_array, self.window_size)
            mask_windows = tf.reshape(mask_windows, shape=[-1, self.window_size * self.window_size])
            attn_mask = tf.expand_dims(mask_windows, axis=1) - tf.expand_dims(mask_windows, axis=2)
            attn_mask = tf.where(attn_mask != 0, -100.0, attn_mask)
            attn_mask = tf.where(attn_mask == 0, 0.0, attn_mask)
            self.attn_mask = keras.Variable(initializer=attn_mask, trainable=False)
        else:
            self.attn_mask = None

    def call(self, x):
        H, W = self.num_patch  # noqa: N806 (as in the example)
        B, L, C = x.get_shape().as_list()  # noqa: N806, RUF059 (as in the example)
        x_skip = x
        x = self.norm1(x)
        x = tf.reshape(x, shape=(-1, H, W, C))
        if self.shift_size > 0:
            shifted_x = tf.roll(x, shift=[-self.shift_size, -self.shift_size], axis=[1, 2])
        else:
            shifted_x = x

        x_windows = window_partition(shifted_x, self.window_size)
        x_windows = tf.reshape(x_windows, shape=(-1, self.window_size * self.window_size, C))
        attn_windows = self.attn(x_windows, mask=self.attn_mask)

        attn_windows = tf.reshape(attn_windows, shape=(-1, self.window_size, self.window_size, C))
        shifted_x = window_reverse(attn_windows, self.window_size, H, W, C)
        if self.shift_size > 0:
            x = tf.roll(shifted_x, shift=[self.shift_size, self.shift_size], axis=[1, 2])
        else:
            x = shifted_x

        x = tf.reshape(x, shape=(-1, H * W, C))
        x = self.drop_path(x)
        x = x_skip + x
        x_skip = x
        x = self.norm2(x)
        x = self.mlp(x)
        x = self.drop_path(x)
        x = x_skip + x
        return x

    def get_config(self):
        config = super().get_config()
        config.update(self.config_arguments)
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchExtract(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size
        self.patch_size_x = patch_size[0]
        self.patch_size_y = patch_size[0]

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=(1, self.patch_size_x, self.patch_size_y, 1),
            strides=(1, self.patch_size_x, self.patch_size_y, 1),
            rates=(1, 1, 1, 1),
            padding="VALID",
        )
        patch_dim = patches.shape[-1]
        patch_num = patches.shape[1]
        return tf.reshape(patches, (batch_size, patch_num * patch_num, patch_dim))

    def get_config(self):
        config = super().get_config()
        config.update({"patch_size": self.patch_size})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchEmbedding(layers.Layer):
    def __init__(self, num_patch, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patch = num_patch
        self.embed_dim = embed_dim
        self.proj = layers.Dense(embed_dim)
        self.pos_embed = layers.Embedding(input_dim=num_patch, output_dim=embed_dim)

    def call(self, patch):
        pos = tf.range(start=0, limit=self.num_patch, delta=1)
        return self.proj(patch) + self.pos_embed(pos)

    def get_config(self):
        config = super().get_config()
        config.update({"num_patch": self.num_patch, "embed_dim": self.embed_dim})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchMerging(layers.Layer):
    def __init__(self, num_patch, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patch = num_patch
        self.embed_dim = embed_dim
        self.linear_trans = layers.Dense(2 * embed_dim, use_bias=False)

    def call(self, x):
        H, W = self.num_patch  # noqa: N806 (as in the example)
        _, _, C = x.get_shape().as_list()  # noqa: N806 (as in the example)
        x = tf.reshape(x, shape=(-1, H, W, C))
        x0 = x[:, 0::2, 0::2, :]
        x1 = x[:, 1::2, 0::2, :]
        x2 = x[:, 0::2, 1::2, :]
        x3 = x[:, 1::2, 1::2, :]
        x = tf.concat((x0, x1, x2, x3), axis=-1)
        x = tf.reshape(x, shape=(-1, (H // 2) * (W // 2), 4 * C))
        return self.linear_trans(x)

    def get_config(self):
        config = super().get_config()
        config.update({"num_patch": self.num_patch, "embed_dim": self.embed_dim})
        return config


def build_model():
    input = layers.Input(input_shape)
    x = PatchExtract(patch_size)(input)
    x = PatchEmbedding(num_patch_x * num_patch_y, embed_dim)(x)
    x = SwinTransformer(
        dim=embed_dim,
        num_patch=(num_patch_x, num_patch_y),
        num_heads=num_heads,
        window_size=window_size,
        shift_size=0,
        num_mlp=num_mlp,
        qkv_bias=qkv_bias,
        drop_rate=drop_rate,
    )(x)
    x = SwinTransformer(
        dim=embed_dim,
        num_patch=(num_patch_x, num_patch_y),
        num_heads=num_heads,
        window_size=window_size,
        shift_size=shift_size,
        num_mlp=num_mlp,
        qkv_bias=qkv_bias,
        drop_rate=drop_rate,
    )(x)
    x = PatchMerging((num_patch_x, num_patch_y), embed_dim=embed_dim)(x)
    x = layers.GlobalAveragePooling1D()(x)
    output = layers.Dense(num_classes, activation="softmax")(x)

    model = keras.Model(input, output)
    model.compile(
        loss=keras.losses.categorical_crossentropy,
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate, clipvalue=clipvalue),
        metrics=[
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(5, name="top-5-accuracy"),
        ],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, *input_shape)) / 255.0
        y = keras.utils.to_categorical(rng.integers(0, num_classes, size=(n, 1)), num_classes)
        return x, y

    return split(128), split(64)
