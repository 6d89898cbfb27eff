# keras-io: examples/vision/supervised-contrastive-learning.py
"""Supervised contrastive pretraining of the encoder with its projection head (the example's
experiment 2, phase 1) on CIFAR-10: synthetic uint8 32x32x3 images with integer labels 0..9
of shape (n, 1) in place of the download; a ResNet50V2 of keras.applications' own v2 blocks
and layer names, widths divided by 8 and 2 blocks per stage in place of 3, 4, 6 and 3, in
place of keras.applications.ResNet50V2(weights=None) (23 M parameters, far too slow on this
machine); the Normalization adapted on the synthetic training images;
layers.experimental.preprocessing.* written as their Keras 3 names, and RandomWidth(0.2) and
RandomHeight(0.2) dropped (Keras 3 has no such layers); tfa.losses.npairs_loss (TensorFlow
Addons is not installed) written out as TensorFlow Addons defines it;
SupervisedContrastiveLoss registered with a get_config so that the saved model reloads; the
baseline classifier and the frozen-encoder classifier (experiments 1 and 2, phase 3) left
out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_classes = 10
input_shape = (32, 32, 3)

learning_rate = 0.001
batch_size = 265
hidden_units = 512
projection_units = 128
num_epochs = 50
dropout_rate = 0.5
temperature = 0.05


def residual_block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """keras.applications' ResNet v2 bottleneck block, as it writes it."""
    preact = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_preact_bn")(x)
    preact = layers.Activation("relu", name=f"{name}_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False, name=f"{name}_2_conv")(
        x
    )
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def stack_residual_blocks_v2(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = residual_block_v2(x, filters, name=f"{name}_block{i}")
    return residual_block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks!s}")


def small_resnet50v2(include_top=False, weights=None, input_shape=None, pooling=None):
    """keras.applications.ResNet50V2(include_top=False, pooling="avg"), smaller."""
    img_input = layers.Input(shape=input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(8, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_residual_blocks_v2(x, 8, 2, name="conv2")
    x = stack_residual_blocks_v2(x, 16, 2, name="conv3")
    x = stack_residual_blocks_v2(x, 32, 2, name="conv4")
    x = stack_residual_blocks_v2(x, 64, 2, stride1=1, name="conv5")
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="post_bn")(x)
    x = layers.Activation("relu", name="post_relu")(x)
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(img_input, x, name="resnet50v2")


def create_encoder(data_augmentation):
    resnet = small_resnet50v2(
        include_top=False, weights=None, input_shape=input_shape, pooling="avg"
    )

    inputs = keras.Input(shape=input_shape)
    augmented = data_augmentation(inputs)
    outputs = resnet(augmented)
    model = keras.Model(inputs=inputs, outputs=outputs, name="cifar10-encoder")
    return model


def npairs_loss(y_true, y_pred):
    """tfa.losses.npairs_loss, as TensorFlow Addons writes it."""
    y_pred = tf.convert_to_tensor(y_pred)
    y_true = tf.cast(y_true, y_pred.dtype)
    # Expand to [batch_size, 1]
    y_true = tf.expand_dims(y_true, -1)
    y_true = tf.cast(tf.equal(y_true, tf.transpose(y_true)), y_pred.dtype)
    y_true /= tf.math.reduce_sum(y_true, 1, keepdims=True)
    loss = tf.nn.softmax_cross_entropy_with_logits(logits=y_pred, labels=y_true)
    return tf.math.reduce_mean(loss)


@keras.saving.register_keras_serializable(package="zoo_supervised_contrastive_learning")
class SupervisedContrastiveLoss(keras.losses.Loss):
    def __init__(self, temperature=1, name=None):
        super().__init__(name=name)
        self.temperature = temperature

    def __call__(self, labels, feature_vectors, sample_weight=None):
        # Normalize feature vectors
        feature_vectors_normalized = tf.math.l2_normalize(feature_vectors, axis=1)
        # Compute logits
        logits = tf.divide(
            tf.matmul(feature_vectors_normalized, tf.transpose(feature_vectors_normalized)),
            self.temperature,
        )
        return npairs_loss(tf.squeeze(labels), logits)

    def get_config(self):
        return {"temperature": self.temperature, "name": self.name}


def add_projection_head(encoder):
    inputs = keras.Input(shape=input_shape)
    features = encoder(inputs)
    outputs = layers.Dense(projection_units, activation="relu")(features)
    model = keras.Model(inputs=inputs, outputs=outputs, name="cifar-encoder_with_projection-head")
    return model


def build_model():
    (x_train, _), _ = load_data()
    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(0.02),
        ]
    )
    # Setting the state of the normalization layer.
    data_augmentation.layers[0].adapt(x_train)

    encoder = create_encoder(data_augmentation)

    encoder_with_projection_head = add_projection_head(encoder)
    encoder_with_projection_head.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=SupervisedContrastiveLoss(temperature),
    )
    return encoder_with_projection_head


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, *input_shape)).astype("uint8")
        y = rng.integers(0, num_classes, size=(n, 1)).astype("uint8")
        return x, y

    return split(128), split(64)
