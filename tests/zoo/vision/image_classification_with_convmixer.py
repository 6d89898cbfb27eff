# keras-io: examples/vision/image_classification_with_convmixer.py
"""ConvMixer on synthetic CIFAR-10-shaped data (uint8 32x32 images, one-hot labels over
10 classes), at the example's own sizes. Keras's own keras.optimizers.AdamW (same settings)
replaces tfa.optimizers.AdamW, which cannot be installed here. The Normalization layer is
adapted on the synthetic training images; as in the example, the augmentation output is
not used (the patch embedding takes `inputs`), so it is not part of the model graph."""

import keras
import numpy as np
from keras import layers

num_classes = 10
input_shape = (32, 32, 3)

weight_decay = 0.0001
learning_rate = 0.1
label_smoothing = 0.1
patch_size = 2  # Size of the patches to be extracted from the input images.
num_patches = (input_shape[0] // patch_size) ** 2  # Number of patch
embedding_dim = 32  # Number of hidden units.
depth = 3  # Number of repetitions of the ConvMixer layer
kernel_size = 9  # Kernel size of the depthwise convolutional layer


def get_ConvMixer(  # noqa: N802 (the example's name)
    data_augmentation, dim, depth, kernel_size, patch_size, num_classes
):
    inputs = layers.Input(shape=input_shape)
    # Image daugmentation
    x = data_augmentation(inputs)
    # Create patch embedding layer
    x = layers.Conv2D(dim, kernel_size=patch_size, strides=patch_size)(inputs)
    x = layers.Activation("gelu")(x)
    x = layers.BatchNormalization()(x)
    # Set aside residual
    previous_block_activaiton = x
    # Create multiple layers of the ConvMixer block
    for _i in range(depth):
        # Apply depthwise convolution
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, padding="same")(x)
        # Apply GeLU activation
        x = layers.Activation("gelu")(x)
        # Apply Batch Normalization
        x = layers.BatchNormalization()(x)
        # Add skip connection
        x = layers.add([x, previous_block_activaiton])
        # Apply pointwise convolution
        x = layers.Conv2D(dim, kernel_size=1, padding="same")(x)
        # Apply GeLU activation
        x = layers.Activation("gelu")(x)
        # Apply Batch Normalization
        x = layers.BatchNormalization()(x)
        # Set aside next residual
        previous_block_activaiton = x
    # Apply GlobalAveragePool
    x = layers.GlobalAveragePooling2D()(x)
    # Get the outputs
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    # Create the model
    model = keras.Model(inputs, outputs)
    return model


def build_model():
    (x_train, _), _ = load_data()
    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(factor=0.1),
            layers.RandomContrast(factor=0.1),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )
    # Compute the mean and the variance of the training data for normalization.
    data_augmentation.layers[0].adapt(x_train)

    model = get_ConvMixer(
        data_augmentation, embedding_dim, depth, kernel_size, patch_size, num_classes
    )
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
        x = rng.integers(0, 256, (n, *input_shape)).astype("uint8")
        y = keras.utils.to_categorical(rng.integers(0, num_classes, (n, 1)), num_classes)
        return x, y

    return split(128), split(64)
