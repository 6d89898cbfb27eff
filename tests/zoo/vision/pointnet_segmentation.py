# keras-io: examples/vision/pointnet_segmentation.py
"""PointNet part segmentation on synthetic ShapeNet-Airplane-shaped data (point clouds
normalised to the unit ball, float64 as loaded, one-hot labels over the 4 parts +
"none") in place of the download; 1024 -> 64 points; widths 64/128/1024/512/256 of the
T-Net cut to 8/16/64/32/16, 64/128/128/512/2048/128 of the network to 8/16/16/32/64/16;
Keras 3 API: keras.ops.tile for tf.tile on a symbolic tensor; OrthogonalRegularizer's
get_config mended (it called super(TransformerEncoder, self) and named l2reg
"l2reg_strength") and registered for saving; the LearningRateScheduler callback kept, the
ModelCheckpoint (a file) left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import callbacks as keras_callbacks
from keras import initializers, layers, losses, optimizers, regularizers

PACKAGE = "zoo_pointnet_segmentation"

LABELS = ["wing", "body", "tail", "engine"]
N_SAMPLE_POINTS = 64
INITIAL_LR = 1e-3


def conv_block(x: tf.Tensor, filters: int, name: str) -> tf.Tensor:
    x = layers.Conv1D(filters, kernel_size=1, padding="valid", name=f"{name}_conv")(x)
    x = layers.BatchNormalization(momentum=0.0, name=f"{name}_batch_norm")(x)
    return layers.Activation("relu", name=f"{name}_relu")(x)


def mlp_block(x: tf.Tensor, filters: int, name: str) -> tf.Tensor:
    x = layers.Dense(filters, name=f"{name}_dense")(x)
    x = layers.BatchNormalization(momentum=0.0, name=f"{name}_batch_norm")(x)
    return layers.Activation("relu", name=f"{name}_relu")(x)


@keras.saving.register_keras_serializable(package=PACKAGE)
class OrthogonalRegularizer(regularizers.Regularizer):
    """Reference: https://keras.io/examples/vision/pointnet/#build-a-model"""

    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.identity = tf.eye(num_features)

    def __call__(self, x):
        x = tf.reshape(x, (-1, self.num_features, self.num_features))
        xxt = tf.tensordot(x, x, axes=(2, 2))
        xxt = tf.reshape(xxt, (-1, self.num_features, self.num_features))
        return tf.reduce_sum(self.l2reg * tf.square(xxt - self.identity))

    def get_config(self):
        config = {}
        config.update({"num_features": self.num_features, "l2reg": self.l2reg})
        return config


def transformation_net(inputs: tf.Tensor, num_features: int, name: str) -> tf.Tensor:
    """
    Reference: https://keras.io/examples/vision/pointnet/#build-a-model.

    The `filters` values come from the original paper:
    https://arxiv.org/pdf/1612.00593.pdf.
    """
    x = conv_block(inputs, filters=8, name=f"{name}_1")
    x = conv_block(x, filters=16, name=f"{name}_2")
    x = conv_block(x, filters=64, name=f"{name}_3")
    x = layers.GlobalMaxPooling1D()(x)
    x = mlp_block(x, filters=32, name=f"{name}_1_1")
    x = mlp_block(x, filters=16, name=f"{name}_2_1")
    return layers.Dense(
        num_features * num_features,
        kernel_initializer="zeros",
        bias_initializer=initializers.Constant(np.eye(num_features).flatten()),
        activity_regularizer=OrthogonalRegularizer(num_features),
        name=f"{name}_final",
    )(x)


def transformation_block(inputs: tf.Tensor, num_features: int, name: str) -> tf.Tensor:
    transformed_features = transformation_net(inputs, num_features, name=name)
    transformed_features = layers.Reshape((num_features, num_features))(transformed_features)
    return layers.Dot(axes=(2, 1), name=f"{name}_mm")([inputs, transformed_features])


def get_shape_segmentation_model(num_points: int, num_classes: int) -> keras.Model:
    input_points = keras.Input(shape=(None, 3))

    # PointNet Classification Network.
    transformed_inputs = transformation_block(
        input_points, num_features=3, name="input_transformation_block"
    )
    features_64 = conv_block(transformed_inputs, filters=8, name="features_64")
    features_128_1 = conv_block(features_64, filters=16, name="features_128_1")
    features_128_2 = conv_block(features_128_1, filters=16, name="features_128_2")
    transformed_features = transformation_block(
        features_128_2, num_features=16, name="transformed_features"
    )
    features_512 = conv_block(transformed_features, filters=32, name="features_512")
    features_2048 = conv_block(features_512, filters=64, name="pre_maxpool_block")
    global_features = layers.MaxPool1D(pool_size=num_points, name="global_features")(features_2048)
    global_features = keras.ops.tile(global_features, [1, num_points, 1])

    # Segmentation Head.
    segmentation_input = layers.Concatenate(name="segmentation_input")(
        [
            features_64,
            features_128_1,
            features_128_2,
            transformed_features,
            features_512,
            global_features,
        ]
    )
    segmentation_features = conv_block(segmentation_input, filters=16, name="segmentation_features")
    outputs = layers.Conv1D(
        num_classes, kernel_size=1, activation="softmax", name="segmentation_head"
    )(segmentation_features)
    return keras.Model(input_points, outputs)


class LRStepDecay:
    """
    Reference:
    https://www.pyimagesearch.com/2019/07/22/keras-learning-rate-schedules-and-decay/
    """

    def __init__(self, initial_lr: float, drop_every: int, decay_factor: float) -> None:
        super().__init__()
        self.initial_lr = initial_lr
        self.drop_every = drop_every
        self.decay_factor = decay_factor

    def __call__(self, epoch: int) -> float:
        exp = np.floor((1 + epoch) / self.drop_every)
        new_lr = self.initial_lr * (self.decay_factor**exp)
        return new_lr


def build_model():
    num_points = N_SAMPLE_POINTS
    num_classes = len(LABELS) + 1
    segmentation_model = get_shape_segmentation_model(num_points, num_classes)
    segmentation_model.compile(
        optimizer=optimizers.Adam(learning_rate=INITIAL_LR),
        loss=losses.CategoricalCrossentropy(),
        metrics=["accuracy"],
    )
    return segmentation_model


def callbacks():
    step_decay_scheduler = LRStepDecay(INITIAL_LR, 15, 0.5)
    lr_callback = keras_callbacks.LearningRateScheduler(
        lambda epoch: step_decay_scheduler(epoch), verbose=True
    )
    return [lr_callback]


def load_data():
    rng = np.random.default_rng(0)
    num_classes = len(LABELS) + 1

    def split(n):
        points = rng.normal(size=(n, N_SAMPLE_POINTS, 3))
        points -= points.mean(axis=1, keepdims=True)
        points /= np.max(np.linalg.norm(points, axis=2), axis=1)[:, None, None]
        labels = rng.integers(0, num_classes, size=(n, N_SAMPLE_POINTS))
        one_hot = np.eye(num_classes, dtype="float32")[labels]
        return points, one_hot

    return split(128), split(64)
