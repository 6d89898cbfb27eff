# keras-io: examples/vision/cswin_transformer.py
"""CSWin Transformer on CIFAR-100: synthetic uint8 32x32x3 images with one-hot labels over 100
classes in place of the CIFAR-100 download; images resized to 32 instead of 96 in its
augmentation, so the four stages run at 8/4/2/1 tokens a side with split sizes 1/2/1/1 in
place of 1/2/3/3 (same two-branch/one-branch layout); one block a stage instead of two;
embedding_dim cut from 64 to 16; keras.optimizers.AdamW in place of tfa.optimizers.AdamW
(TensorFlow Addons is not installed); keras.ops.reshape in place of tf.reshape on the
symbolic patch embedding (Keras 3 functional API); the Normalization layer adapted on the
synthetic training images; its layers given get_config (the default act_layer/norm_layer
are not serialized)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_classes = 100
input_shape = (32, 32, 3)

learning_rate = 0.001
weight_decay = 0.0001
image_size = 32  # We'll resize input images to this size
label_smoothing = 0.1


@keras.saving.register_keras_serializable(package="zoo_cswin_transformer")
class MLP(layers.Layer):
    def __init__(self, hidden_dim=None, out_dim=None, act_layer=tf.nn.gelu, drop=0):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.out_dim = out_dim
        self.drop_rate = drop
        self.fc1 = layers.Dense(hidden_dim)
        self.act = act_layer
        self.fc2 = layers.Dense(out_dim)
        self.drop = layers.Dropout(drop)

    def call(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x

    def get_config(self):
        return {"hidden_dim": self.hidden_dim, "out_dim": self.out_dim, "drop": self.drop_rate}


def image_to_window(image, height_split, width_split):
    _, channel, height, width = image.shape
    image_reshape = tf.reshape(
        image,
        shape=(
            -1,
            channel,
            height // height_split,
            height_split,
            width // width_split,
            width_split,
        ),
    )
    image_reshape = tf.transpose(image_reshape, perm=(0, 2, 4, 3, 5, 1))
    image_permutation = tf.reshape(image_reshape, shape=(-1, height_split * width_split, channel))
    return image_permutation


def window_to_image(image_split, height_split, width_split, height, width):
    channel = image_split.shape[2]
    image = tf.reshape(
        image_split,
        shape=(
            -1,
            height // height_split,
            width // width_split,
            height_split,
            width_split,
            channel,
        ),
    )
    image = tf.transpose(image, perm=(0, 1, 3, 2, 4, 5))
    image = tf.reshape(image, shape=(-1, height, width, channel))
    return image


@keras.saving.register_keras_serializable(package="zoo_cswin_transformer")
class CSWinAttention(layers.Layer):
    def __init__(
        self,
        in_dim,
        resolution,
        idx,
        split_size=7,
        out_dim=None,
        num_heads=8,
        attention_dropout=0,
        projection_dropout=0,
    ):
        super().__init__()
        self.config_args = dict(
            in_dim=in_dim,
            resolution=resolution,
            idx=idx,
            split_size=split_size,
            out_dim=out_dim,
            num_heads=num_heads,
            attention_dropout=attention_dropout,
            projection_dropout=projection_dropout,
        )
        self.in_dim = in_dim
        self.out_dim = out_dim or in_dim
        self.resolution = resolution
        self.split_size = split_size
        self.num_heads = num_heads
        head_dim = in_dim // num_heads
        self.scale = head_dim**-0.5
        if idx == -1:
            height_split, width_split = self.resolution, self.resolution
        elif idx == 0:
            height_split, width_split = self.resolution, self.split_size
        elif idx == 1:
            width_split, height_split = self.resolution, self.split_size
        else:
            print("ERROR MODE", idx)
            exit(0)
        self.height_split = height_split
        self.width_split = width_split
        self.get_value = layers.Conv2D(
            in_dim, kernel_size=3, strides=1, padding="same", groups=in_dim
        )

        self.attention_dropout = layers.Dropout(attention_dropout)

    def image_to_cswindow(self, x):
        _, num_patches, channel = x.shape
        height = width = int(np.sqrt(num_patches))
        x = tf.transpose(x, perm=(0, 2, 1))
        x = tf.reshape(x, shape=(-1, channel, height, width))
        x = image_to_window(x, self.height_split, self.width_split)
        x = tf.reshape(
            x,
            shape=(
                -1,
                self.height_split * self.width_split,
                self.num_heads,
                channel // self.num_heads,
            ),
        )
        x = tf.transpose(x, perm=(0, 2, 1, 3))
        return x

    def get_local_enhanced_position_embedding(self, x, function):
        _, num_patches, channel = x.shape
        height = width = int(np.sqrt(num_patches))
        x = tf.transpose(x, perm=(0, 2, 1))
        x = tf.reshape(x, shape=(-1, channel, height, width))

        height_split, width_split = self.height_split, self.width_split
        x = tf.reshape(
            x,
            shape=(
                -1,
                channel,
                height // height_split,
                height_split,
                width // width_split,
                width_split,
            ),
        )
        x = tf.transpose(x, perm=(0, 2, 4, 1, 3, 5))
        x = tf.reshape(x, shape=(-1, height_split, width_split, channel))
        local_enhanced_position_embedding = function(x)  ### B', C, H', W'
        local_enhanced_position_embedding = tf.reshape(
            local_enhanced_position_embedding,
            shape=(
                -1,
                self.num_heads,
                channel // self.num_heads,
                height_split * width_split,
            ),
        )
        local_enhanced_position_embedding = tf.transpose(
            local_enhanced_position_embedding, perm=(0, 1, 3, 2)
        )
        x = tf.reshape(
            x,
            shape=(
                -1,
                self.num_heads,
                channel // self.num_heads,
                self.height_split * self.width_split,
            ),
        )
        x = tf.transpose(x, perm=(0, 1, 3, 2))
        return x, local_enhanced_position_embedding

    def call(self, qkv):
        query, key, value = qkv[0], qkv[1], qkv[2]
        height = width = self.resolution
        _, num_patches, channel = query.shape
        assert num_patches == height * width

        query = self.image_to_cswindow(query)
        key = self.image_to_cswindow(key)
        (
            value,
            local_enhanced_position_embedding,
        ) = self.get_local_enhanced_position_embedding(value, self.get_value)

        query = query * self.scale
        key = tf.transpose(key, perm=(0, 1, 3, 2))
        attention = query @ key
        attention = tf.nn.softmax(attention, axis=-1)
        attention = self.attention_dropout(attention)

        x = (attention @ value) + local_enhanced_position_embedding
        x = tf.transpose(x, perm=(0, 2, 1, 3))
        x = tf.reshape(x, shape=(-1, self.height_split * self.width_split, channel))

        x = window_to_image(x, self.height_split, self.width_split, height, width)
        x = tf.reshape(x, shape=(-1, height * width, channel))

        return x

    def get_config(self):
        return dict(self.config_args)


@keras.saving.register_keras_serializable(package="zoo_cswin_transformer")
class CSWinBlock(layers.Layer):
    def __init__(
        self,
        embedding_dim,
        resolution,
        num_heads,
        split_size=7,
        mlp_ratio=4.0,
        drop=0.0,
        attention_dropout=0.0,
        act_layer=tf.nn.gelu,
        norm_layer=layers.LayerNormalization,
        last_stage=False,
    ):
        super().__init__()
        self.config_args = dict(
            embedding_dim=embedding_dim,
            resolution=resolution,
            num_heads=num_heads,
            split_size=split_size,
            mlp_ratio=mlp_ratio,
            drop=drop,
            attention_dropout=attention_dropout,
            last_stage=last_stage,
        )
        self.embedding_dim = embedding_dim
        self.num_heads = num_heads
        self.patches_resolution = resolution
        self.split_size = split_size
        self.mlp_ratio = mlp_ratio
        self.qkv = layers.Dense(embedding_dim * 3)
        self.norm1 = norm_layer()

        if self.patches_resolution == split_size:
            last_stage = True
        if last_stage:
            self.branch_num = 1
        else:
            self.branch_num = 2
        self.projection = layers.Dense(embedding_dim)
        self.projection_dropout = layers.Dropout(drop)

        if last_stage:
            self.attentions = [
                CSWinAttention(
                    embedding_dim,
                    resolution=self.patches_resolution,
                    idx=-1,
                    split_size=split_size,
                    num_heads=num_heads,
                    out_dim=embedding_dim,
                    attention_dropout=attention_dropout,
                    projection_dropout=drop,
                )
                for i in range(self.branch_num)
            ]
        else:
            self.attentions = [
                CSWinAttention(
                    embedding_dim // 2,
                    resolution=self.patches_resolution,
                    idx=i,
                    split_size=split_size,
                    num_heads=num_heads // 2,
                    out_dim=embedding_dim // 2,
                    attention_dropout=attention_dropout,
                    projection_dropout=drop,
                )
                for i in range(self.branch_num)
            ]

        mlp_hidden_dim = int(embedding_dim * mlp_ratio)
        self.mlp = MLP(
            hidden_dim=mlp_hidden_dim,
            out_dim=embedding_dim,
            act_layer=act_layer,
            drop=drop,
        )
        self.norm2 = norm_layer()

    def call(self, x):
        height = width = self.patches_resolution
        _, num_patches, channel = x.shape
        assert num_patches == height * width
        image = self.norm1(x)
        qkv = self.qkv(image)
        qkv = tf.reshape(qkv, shape=(-1, num_patches, 3, channel))
        qkv = tf.transpose(qkv, perm=(2, 0, 1, 3))
        if self.branch_num == 2:
            x1 = self.attentions[0](qkv[:, :, :, : channel // 2])
            x2 = self.attentions[1](qkv[:, :, :, channel // 2 :])
            attention_x = tf.concat([x1, x2], 2)
        else:
            attention_x = self.attentions[0](qkv)
        attention_x = self.projection(attention_x)
        x = x + attention_x
        x = x + self.mlp(self.norm2(x))
        return x

    def get_config(self):
        return dict(self.config_args)


@keras.saving.register_keras_serializable(package="zoo_cswin_transformer")
class MergeBlock(layers.Layer):
    def __init__(self, dim, norm_layer=layers.LayerNormalization):
        super().__init__()
        self.dim = dim
        self.conv = layers.Conv2D(dim, 3, 2, padding="same")
        self.norm = norm_layer()

    def call(self, x):
        _, new_num_patches, channel = x.shape
        height = width = int(np.sqrt(new_num_patches))
        x = tf.reshape(x, shape=(-1, height, width, channel))
        x = self.conv(x)
        channel = x.shape[3]
        x = tf.reshape(x, shape=(-1, channel, height // 2 * width // 2))
        x = tf.transpose(x, perm=(0, 2, 1))
        x = self.norm(x)

        return x

    def get_config(self):
        return {"dim": self.dim}


def get_model(
    data_augmentation,
    image_size=image_size,
    num_classes=100,
    embedding_dim=16,
    num_transformer_layers=(1, 1, 1, 1),
    split_sizes=(1, 2, 1, 1),
    num_heads=(2, 4, 4, 2),
    mlp_ratio=4.0,
    drop_rate=0.7,
    attention_dropout=0.7,
    norm_layer=layers.LayerNormalization,
):
    inputs = layers.Input(shape=input_shape)
    # Image augment
    x = data_augmentation(inputs)
    # create patch embedding
    x = layers.Conv2D(embedding_dim, 7, 4, padding="same")(x)
    _, _height, _width, channel = x.shape
    x = keras.ops.reshape(x, (-1, (image_size // 4) * (image_size // 4), channel))

    heads = num_heads
    # first stage
    for _ in range(num_transformer_layers[0]):
        x = CSWinBlock(
            embedding_dim=embedding_dim,
            num_heads=heads[0],
            resolution=image_size // 4,
            mlp_ratio=mlp_ratio,
            split_size=split_sizes[0],
            drop=drop_rate,
            attention_dropout=attention_dropout,
            norm_layer=norm_layer,
        )(x)
    merge1 = MergeBlock(embedding_dim * 2)(x)

    embedding_dim = embedding_dim * 2
    # second stage
    for _ in range(num_transformer_layers[1]):
        x = CSWinBlock(
            embedding_dim=embedding_dim,
            num_heads=heads[1],
            resolution=image_size // 8,
            mlp_ratio=mlp_ratio,
            split_size=split_sizes[1],
            drop=drop_rate,
            attention_dropout=attention_dropout,
            norm_layer=norm_layer,
        )(merge1)
    merge2 = MergeBlock(embedding_dim * 2)(x)
    embedding_dim = embedding_dim * 2
    # third stage
    for _ in range(num_transformer_layers[2]):
        x = CSWinBlock(
            embedding_dim=embedding_dim,
            num_heads=heads[2],
            resolution=image_size // 16,
            mlp_ratio=mlp_ratio,
            split_size=split_sizes[2],
            drop=drop_rate,
            attention_dropout=attention_dropout,
            norm_layer=norm_layer,
        )(merge2)
    merge3 = MergeBlock(embedding_dim * 2)(x)
    embedding_dim = embedding_dim * 2
    # fourth stage
    for _ in range(num_transformer_layers[3]):
        x = CSWinBlock(
            embedding_dim=embedding_dim,
            num_heads=heads[3],
            resolution=image_size // 32,
            mlp_ratio=mlp_ratio,
            split_size=split_sizes[-1],
            drop=drop_rate,
            attention_dropout=attention_dropout,
            norm_layer=norm_layer,
            last_stage=True,
        )(merge3)
    x = layers.GlobalAvgPool1D()(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.Resizing(image_size, image_size),
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(factor=0.1),
            layers.RandomContrast(factor=0.1),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )
    # Compute the mean and the variance of the training data for normalization.
    (x_train, _), _ = load_data()
    data_augmentation.layers[0].adapt(x_train)

    model = get_model(data_augmentation)
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
        x = rng.integers(0, 256, size=(n, *input_shape), dtype=np.uint8)
        y = keras.utils.to_categorical(rng.integers(0, num_classes, size=(n, 1)), num_classes)
        return x, y

    return split(128), split(64)
