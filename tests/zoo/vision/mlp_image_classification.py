# keras-io: examples/vision/mlp_image_classification.py
"""MLP-Mixer on CIFAR-100 (the first of the example's three models; FNet and gMLP not
adapted): synthetic uint8 32x32x3 images with int labels over 100 classes in place of the
CIFAR-100 download; image_size 16 in place of 64 (images resized down, not up), patch
size 4 in place of 8, embedding_dim 16 in place of 256, 2 blocks in place of 4;
keras.optimizers.AdamW in place of tfa.optimizers.AdamW and Activation("gelu") in place
of tfa.layers.GELU (TensorFlow Addons is not installed); the Normalization layer adapted
on the synthetic training images; Patches and MLPMixerLayer take **kwargs and have a
get_config so that they can be reloaded; the data_augmentation model built in
build_model and passed to build_classifier in place of a module-level one.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_classes = 100
input_shape = (32, 32, 3)

weight_decay = 0.0001
dropout_rate = 0.2
image_size = 16  # We'll resize input images to this size.
patch_size = 4  # Size of the patches to be extracted from the input images.
num_patches = (image_size // patch_size) ** 2  # Size of the data array.
embedding_dim = 16  # Number of hidden units.
num_blocks = 2  # Number of blocks.
learning_rate = 0.005


def build_classifier(blocks, data_augmentation):
    inputs = layers.Input(shape=input_shape)
    # Augment data.
    augmented = data_augmentation(inputs)
    # Create patches.
    patches = Patches(patch_size, num_patches)(augmented)
    # Encode patches to generate a [batch_size, num_patches, embedding_dim] tensor.
    x = layers.Dense(units=embedding_dim)(patches)
    # Process x using the module blocks.
    x = blocks(x)
    # Apply global average pooling to generate a [batch_size, embedding_dim] representation tensor.
    representation = layers.GlobalAveragePooling1D()(x)
    # Apply dropout.
    representation = layers.Dropout(rate=dropout_rate)(representation)
    # Compute logits outputs.
    logits = layers.Dense(num_classes)(representation)
    # Create the Keras model.
    return keras.Model(inputs=inputs, outputs=logits)


def compile_model(model):
    # Create Adam optimizer with weight decay.
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
    )
    # Compile the model.
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="acc"),
            keras.metrics.SparseTopKCategoricalAccuracy(5, name="top5-acc"),
        ],
    )


def callbacks():
    # Create a learning rate scheduler callback.
    reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=5)
    # Create an early stopping callback.
    early_stopping = tf.keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=10, restore_best_weights=True
    )
    return [early_stopping, reduce_lr]


@keras.saving.register_keras_serializable(package="zoo_mlp_image_classification")
class Patches(layers.Layer):
    def __init__(self, patch_size, num_patches, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size
        self.num_patches = num_patches

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=[1, self.patch_size, self.patch_size, 1],
            strides=[1, self.patch_size, self.patch_size, 1],
            rates=[1, 1, 1, 1],
            padding="VALID",
        )
        patch_dims = patches.shape[-1]
        patches = tf.reshape(patches, [batch_size, self.num_patches, patch_dims])
        return patches

    def get_config(self):
        config = super().get_config()
        config.update({"patch_size": self.patch_size, "num_patches": self.num_patches})
        return config


@keras.saving.register_keras_serializable(package="zoo_mlp_image_classification")
class MLPMixerLayer(layers.Layer):
    def __init__(self, num_patches, hidden_units, dropout_rate, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.num_patches = num_patches
        self.hidden_units = hidden_units
        self.dropout_rate = dropout_rate

        self.mlp1 = keras.Sequential(
            [
                layers.Dense(units=num_patches),
                layers.Activation("gelu"),
                layers.Dense(units=num_patches),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.mlp2 = keras.Sequential(
            [
                layers.Dense(units=num_patches),
                layers.Activation("gelu"),
                layers.Dense(units=embedding_dim),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.normalize = layers.LayerNormalization(epsilon=1e-6)

    def call(self, inputs):
        # Apply layer normalization.
        x = self.normalize(inputs)
        # Transpose inputs from [num_batches, num_patches, hidden_units] to
        # [num_batches, hidden_units, num_patches].
        x_channels = tf.linalg.matrix_transpose(x)
        # Apply mlp1 on each channel independently.
        mlp1_outputs = self.mlp1(x_channels)
        # Transpose mlp1_outputs from [num_batches, hidden_dim, num_patches] to
        # [num_batches, num_patches, hidden_units].
        mlp1_outputs = tf.linalg.matrix_transpose(mlp1_outputs)
        # Add skip connection.
        x = mlp1_outputs + inputs
        # Apply layer normalization.
        x_patches = self.normalize(x)
        # Apply mlp2 on each patch independtenly.
        mlp2_outputs = self.mlp2(x_patches)
        # Add skip connection.
        x = x + mlp2_outputs
        return x

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_patches": self.num_patches,
                "hidden_units": self.hidden_units,
                "dropout_rate": self.dropout_rate,
            }
        )
        return config


def build_model():
    (x_train, _), *_ = load_data()
    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.Resizing(image_size, image_size),
            layers.RandomFlip("horizontal"),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )
    # Compute the mean and the variance of the training data for normalization.
    data_augmentation.layers[0].adapt(x_train)

    mlpmixer_blocks = keras.Sequential(
        [MLPMixerLayer(num_patches, embedding_dim, dropout_rate) for _ in range(num_blocks)]
    )
    mlpmixer_classifier = build_classifier(mlpmixer_blocks, data_augmentation)
    compile_model(mlpmixer_classifier)
    return mlpmixer_classifier


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, *input_shape)).astype("uint8")
        y = rng.integers(0, num_classes, size=(n, 1))
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
