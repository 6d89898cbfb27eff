# keras-io: examples/vision/trans_unet_multi_organ_segmentation.py
"""TransUNet for 2D multi-organ segmentation on Synapse: synthetic float32 32x32x3 slices in
[0, 1] with uint8 masks of shape (32, 32, 1) over 9 classes in place of the Kaggle .npz/.h5
download (224x224), the training slices put through the example's own random_augment in
load_data (there in its tf.data map); IMAGE_SIZE 32, PROJECTION_DIM 32,
NUM_TRANSFORMER_LAYERS 2, HIDDEN_DIM 64 and decoder_filters [64, 64, 32, 32] in place of
224, 256, 8, 512 and [512, 256, 128, 64] (GroupNormalization's 32 groups kept); the ImageNet
ResNet50 replaced by one of keras.applications' own blocks and layer names with no weights,
widths divided by 8 and one block a stage in place of 3, 4, 6 and 3, so the feature pyramid
taken by name is conv1_relu and conv2/3/4_block1_out in place of conv2_block3_out,
conv3_block4_out and conv4_block6_out (full depth took 41 s to fit here); the encoder's
fixed (224, 224, 3) input written as image_size; the example's registered classes and loss
registered under package "zoo_trans_unet_multi_organ_segmentation" in place of "Trans-UNET";
the ReduceLROnPlateau and EarlyStopping callbacks kept, the inference and plots left out.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers, ops

PACKAGE = "zoo_trans_unet_multi_organ_segmentation"

BATCH_SIZE = 16
IMAGE_SIZE = 32
NUM_CLASSES = 9
LEARNING_RATE = 1e-4
WEIGHT_DECAY = 1e-3
PROJECTION_DIM = 32
NUM_TRANSFORMER_LAYERS = 2
HIDDEN_DIM = 64
SEED = 42

_aug_kw = dict(fill_mode="nearest", interpolation="nearest", seed=SEED)


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """keras.applications' ResNet v1 bottleneck block, as it writes it."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_0_bn")(
            shortcut
        )
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="SAME", name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_3_bn")(x)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def small_resnet50(weights=None, include_top=False, input_tensor=None):
    """keras.applications.ResNet50(include_top=False), widths divided by 8, one block a stage."""
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(input_tensor)
    x = layers.Conv2D(8, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_residual_blocks_v1(x, 8, 1, stride1=1, name="conv2")
    x = stack_residual_blocks_v1(x, 16, 1, name="conv3")
    x = stack_residual_blocks_v1(x, 32, 1, name="conv4")
    x = stack_residual_blocks_v1(x, 64, 1, name="conv5")
    return keras.Model(keras.utils.get_source_inputs(input_tensor), x, name="resnet50")


_Up = keras.layers.UpSampling2D
_C2D = keras.layers.Conv2D
_GN = keras.layers.GroupNormalization


def _build_resnet_encoder(image_size):
    """Returns a ResNet-50 feature pyramid as a plain keras.Model."""
    inputs = keras.Input(shape=image_size)
    base = small_resnet50(
        weights=None,
        include_top=False,
        input_tensor=keras.applications.resnet50.preprocess_input(inputs),
    )
    names = ("conv1_relu", "conv2_block1_out", "conv3_block1_out", "conv4_block1_out")
    outputs = [base.get_layer(n).output for n in names]
    return keras.Model(inputs=inputs, outputs=outputs)


@keras.saving.register_keras_serializable(package=PACKAGE)
class PatchEmbedding(keras.layers.Layer):
    """Projects CNN feature map patches into position-aware token embeddings."""

    def __init__(self, patch_size, embedding_dim, num_patches, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size
        self.embedding_dim = embedding_dim
        self.num_patches = num_patches
        self.projection = keras.layers.Conv2D(
            embedding_dim, patch_size, strides=patch_size, padding="valid"
        )

    def build(self, input_shape):
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(1, self.num_patches, self.embedding_dim),
            initializer="random_normal",
        )

    def call(self, inputs):
        patches = self.projection(inputs)
        batch_size = ops.shape(patches)[0]
        return ops.reshape(patches, [batch_size, -1, self.embedding_dim]) + self.position_embeddings

    def get_config(self):
        keys = ["patch_size", "embedding_dim", "num_patches"]
        return {**super().get_config(), **{k: getattr(self, k) for k in keys}}


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerBlock(keras.layers.Layer):
    """Pre-LN Transformer block: MHSA + MLP with residual connections."""

    def __init__(self, embedding_dim, num_heads, hidden_dim, dropout_rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.embedding_dim = embedding_dim
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.dropout_rate = dropout_rate
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.attn = keras.layers.MultiHeadAttention(
            num_heads=num_heads,
            key_dim=embedding_dim // num_heads,
            dropout=dropout_rate,
        )
        self.mlp = keras.Sequential(
            [
                keras.layers.Dense(hidden_dim, activation="gelu"),
                keras.layers.Dropout(dropout_rate),
                keras.layers.Dense(embedding_dim),
                keras.layers.Dropout(dropout_rate),
            ]
        )

    def call(self, inputs, training=False):
        hidden = inputs + self.attn(self.norm1(inputs), self.norm1(inputs), training=training)
        return hidden + self.mlp(self.norm2(hidden), training=training)

    def get_config(self):
        keys = ["embedding_dim", "num_heads", "hidden_dim", "dropout_rate"]
        return {**super().get_config(), **{k: getattr(self, k) for k in keys}}


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransUNet(keras.Model):
    """Hybrid CNN-Transformer U-Net for 2D multi-organ segmentation (Chen et al., 2021)."""

    def __init__(
        self,
        image_size=(224, 224, 3),
        patch_size=1,
        embedding_dim=64,
        num_heads=4,
        n_layers=6,
        hidden_dim=512,
        dropout_rate=0.1,
        num_classes=9,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.image_size = image_size
        self.patch_size = patch_size
        self.embedding_dim = embedding_dim
        self.num_heads = num_heads
        self.n_layers = n_layers
        self.hidden_dim = hidden_dim
        self.dropout_rate = dropout_rate
        self.num_classes = num_classes
        feature_map_size = image_size[0] // 16
        self.cnn_backbone = _build_resnet_encoder(image_size)
        self.patch_embedding = PatchEmbedding(
            patch_size, embedding_dim, (feature_map_size // patch_size) ** 2
        )
        self.transformer_blocks = [
            TransformerBlock(embedding_dim, num_heads, hidden_dim, dropout_rate)
            for _ in range(n_layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        decoder_filters = [64, 64, 32, 32]
        self.upsamplers = [_Up(2, interpolation="bilinear") for _ in decoder_filters]
        self.concats = [keras.layers.Concatenate() for _ in decoder_filters[:3]]
        self.convs = [_C2D(f, 3, padding="same", use_bias=False) for f in decoder_filters]
        self.gnorms = [_GN(groups=32) for _ in decoder_filters]
        self.acts = [keras.layers.Activation("relu") for _ in decoder_filters]
        self.segmentation_head = keras.layers.Conv2D(
            num_classes, 1, padding="same", activation="softmax"
        )

    def call(self, inputs, training=False):
        skip1, skip2, skip3, features = self.cnn_backbone(inputs, training=training)
        skips = [skip3, skip2, skip1]
        tokens = self.patch_embedding(features)
        for block in self.transformer_blocks:
            tokens = block(tokens, training=training)
        tokens = self.encoder_norm(tokens)
        fmap_size = self.image_size[0] // 16 // self.patch_size
        decoded = ops.reshape(tokens, (-1, fmap_size, fmap_size, self.embedding_dim))
        tr = training
        for i in range(4):
            decoded = self.upsamplers[i](decoded)
            if i < 3:
                decoded = self.concats[i]([decoded, skips[i]])
            decoded = self.acts[i](self.gnorms[i](self.convs[i](decoded), training=tr))
        return self.segmentation_head(decoded)

    def get_config(self):
        keys = ["image_size", "patch_size", "embedding_dim", "num_heads", "n_layers"]
        keys += ["hidden_dim", "dropout_rate", "num_classes"]
        return {**super().get_config(), **{k: getattr(self, k) for k in keys}}


@keras.saving.register_keras_serializable(package=PACKAGE)
def combined_loss(y_true, y_pred, smooth=1e-6):
    y_true = ops.squeeze(y_true, -1)
    ce = ops.mean(keras.losses.sparse_categorical_crossentropy(y_true, y_pred))
    y_true_oh = ops.one_hot(ops.cast(y_true, "int32"), num_classes=ops.shape(y_pred)[-1])
    y_pred = ops.clip(y_pred, 1e-6, 1.0)
    intersection = ops.sum(y_true_oh * y_pred, axis=[1, 2])
    union = ops.sum(y_true_oh + y_pred, axis=[1, 2])
    dice_loss = 1 - ops.mean((2.0 * intersection + smooth) / (union + smooth))
    return 0.5 * ce + 0.5 * dice_loss


@keras.saving.register_keras_serializable(package=PACKAGE)
class MeanIoUWrapper(keras.metrics.MeanIoU):
    """MeanIoU adapted to accept sparse integer ground-truth labels."""

    def __init__(self, num_classes, name="mean_io_u_wrapper", **kwargs):
        for k in ("ignore_class", "sparse_y_true", "sparse_y_pred"):
            kwargs.pop(k, None)
        super().__init__(
            num_classes,
            name=name,
            sparse_y_true=True,
            sparse_y_pred=False,
            **kwargs,
        )
        self._num_classes = num_classes

    def update_state(self, y_true, y_pred, sample_weight=None):
        return super().update_state(ops.squeeze(y_true, axis=-1), y_pred, sample_weight)

    def get_config(self):
        return {"num_classes": self._num_classes, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_model():
    model = TransUNet(
        image_size=(IMAGE_SIZE, IMAGE_SIZE, 3),
        embedding_dim=PROJECTION_DIM,
        num_heads=4,
        n_layers=NUM_TRANSFORMER_LAYERS,
        hidden_dim=HIDDEN_DIM,
        dropout_rate=0.1,
        num_classes=NUM_CLASSES,
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=LEARNING_RATE, weight_decay=WEIGHT_DECAY),
        loss=combined_loss,
        metrics=[MeanIoUWrapper(num_classes=NUM_CLASSES)],
    )
    return model


def callbacks():
    _rlr = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=5, min_lr=1e-7
    )
    _es = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
    return [_rlr, _es]


def load_data():
    joint_augment = keras.Sequential(
        [
            keras.layers.RandomRotation(factor=5 / 360.0, **_aug_kw),
            keras.layers.RandomZoom(height_factor=(-0.1, 0.1), **_aug_kw),
        ]
    )

    def random_augment(image, label):
        combined = ops.concatenate([image, ops.cast(label, "float32")], axis=-1)
        augmented = joint_augment(combined, training=True)
        return augmented[..., :3], ops.cast(augmented[..., 3:], "uint8")

    rng = np.random.default_rng(0)

    def split(n):
        image = rng.random((n, IMAGE_SIZE, IMAGE_SIZE, 1), dtype="float32")
        image = np.repeat(image, 3, axis=-1)
        label = rng.integers(0, NUM_CLASSES, size=(n, IMAGE_SIZE, IMAGE_SIZE, 1)).astype("uint8")
        return image, label

    x_train, y_train = random_augment(*split(128))
    test = split(64)
    # Not augmented, as the example's val_dataset is not.
    return (np.asarray(x_train), np.asarray(y_train)), split(32), test
