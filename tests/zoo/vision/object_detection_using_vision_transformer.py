# keras-io: examples/vision/object_detection_using_vision_transformer.py
"""Object detection with a Vision Transformer: synthetic 32x32x3 float images in [0, 255]
with 4 relative box coordinates in [0, 1] in place of the Caltech 101 airplanes download
(224x224); patch size 8 in place of 32, projection_dim 16 in place of 64, 2 transformer
layers in place of 4 and head units [64, 32, 16, 8, 4] in place of
[2048, 1024, 512, 64, 32]; keras.optimizers.AdamW in place of tfa.optimizers.AdamW
(TensorFlow Addons is not installed); Patches and PatchEncoder take **kwargs and their
get_config returns their own arguments (the example's returned module-level
hyperparameters their __init__ does not take, so they could not be reloaded); the
ModelCheckpoint callback (it only writes files) left out.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

image_size = 32  # resize input images to this size
patch_size = 8  # Size of the patches to be extracted from the input images

input_shape = (image_size, image_size, 3)  # input image shape
learning_rate = 0.001
weight_decay = 0.0001
num_patches = (image_size // patch_size) ** 2
projection_dim = 16
num_heads = 4
# Size of the transformer layers
transformer_units = [
    projection_dim * 2,
    projection_dim,
]
transformer_layers = 2
mlp_head_units = [64, 32, 16, 8, 4]  # Size of the dense layers


def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=tf.nn.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x


@keras.saving.register_keras_serializable(package="zoo_object_detection_using_vision_transformer")
class Patches(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def get_config(self):
        config = super().get_config().copy()
        config.update({"patch_size": self.patch_size})
        return config

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=[1, self.patch_size, self.patch_size, 1],
            strides=[1, self.patch_size, self.patch_size, 1],
            rates=[1, 1, 1, 1],
            padding="VALID",
        )
        # return patches
        return tf.reshape(patches, [batch_size, -1, patches.shape[-1]])


@keras.saving.register_keras_serializable(package="zoo_object_detection_using_vision_transformer")
class PatchEncoder(layers.Layer):
    def __init__(self, num_patches, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patches = num_patches
        self.projection_dim = projection_dim
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def get_config(self):
        config = super().get_config().copy()
        config.update({"num_patches": self.num_patches, "projection_dim": self.projection_dim})
        return config

    def call(self, patch):
        positions = tf.range(start=0, limit=self.num_patches, delta=1)
        encoded = self.projection(patch) + self.position_embedding(positions)
        return encoded


def create_vit_object_detector(
    input_shape,
    patch_size,
    num_patches,
    projection_dim,
    num_heads,
    transformer_units,
    transformer_layers,
    mlp_head_units,
):
    inputs = layers.Input(shape=input_shape)
    # Create patches
    patches = Patches(patch_size)(inputs)
    # Encode patches
    encoded_patches = PatchEncoder(num_patches, projection_dim)(patches)

    # Create multiple layers of the Transformer block.
    for _ in range(transformer_layers):
        # Layer normalization 1.
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
        # Create a multi-head attention layer.
        attention_output = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=projection_dim, dropout=0.1
        )(x1, x1)
        # Skip connection 1.
        x2 = layers.Add()([attention_output, encoded_patches])
        # Layer normalization 2.
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        # MLP
        x3 = mlp(x3, hidden_units=transformer_units, dropout_rate=0.1)
        # Skip connection 2.
        encoded_patches = layers.Add()([x3, x2])

    # Create a [batch_size, projection_dim] tensor.
    representation = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
    representation = layers.Flatten()(representation)
    representation = layers.Dropout(0.3)(representation)
    # Add MLP.
    features = mlp(representation, hidden_units=mlp_head_units, dropout_rate=0.3)

    bounding_box = layers.Dense(4)(features)  # Final four neurons that output bounding box

    # return Keras model.
    return keras.Model(inputs=inputs, outputs=bounding_box)


def build_model():
    model = create_vit_object_detector(
        input_shape,
        patch_size,
        num_patches,
        projection_dim,
        num_heads,
        transformer_units,
        transformer_layers,
        mlp_head_units,
    )
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay)

    # Compile model.
    model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError())
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(monitor="val_loss", patience=10)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, size=(n, *input_shape)).astype("float32")
        top_left = rng.uniform(0, 0.5, size=(n, 2))
        bottom_right = top_left + rng.uniform(0.1, 0.5, size=(n, 2))
        targets = np.concatenate([top_left, bottom_right], axis=1)
        return images, targets

    train, test = split(128), split(64)
    return train, split(32), test
