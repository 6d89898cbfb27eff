# keras-io: examples/vision/pointnet.py
"""PointNet on synthetic ModelNet10-shaped point clouds (points in [-1, 1], float64 as
trimesh samples them, labels 0-9) in place of the download and trimesh sampling; 2048 ->
64 points; widths 32/64/512 and 256/128 cut to 8/16/64 and 32/16; OrthogonalRegularizer
given get_config and registered for saving."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_pointnet"

NUM_POINTS = 64
NUM_CLASSES = 10


def conv_bn(x, filters):
    x = layers.Conv1D(filters, kernel_size=1, padding="valid")(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


def dense_bn(x, filters):
    x = layers.Dense(filters)(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


@keras.saving.register_keras_serializable(package=PACKAGE)
class OrthogonalRegularizer(keras.regularizers.Regularizer):
    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.eye = tf.eye(num_features)

    def __call__(self, x):
        x = tf.reshape(x, (-1, self.num_features, self.num_features))
        xxt = tf.tensordot(x, x, axes=(2, 2))
        xxt = tf.reshape(xxt, (-1, self.num_features, self.num_features))
        return tf.reduce_sum(self.l2reg * tf.square(xxt - self.eye))

    def get_config(self):
        return {"num_features": self.num_features, "l2reg": self.l2reg}


def tnet(inputs, num_features):
    # Initalise bias as the indentity matrix
    bias = keras.initializers.Constant(np.eye(num_features).flatten())
    reg = OrthogonalRegularizer(num_features)

    x = conv_bn(inputs, 8)
    x = conv_bn(x, 16)
    x = conv_bn(x, 64)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 32)
    x = dense_bn(x, 16)
    x = layers.Dense(
        num_features * num_features,
        kernel_initializer="zeros",
        bias_initializer=bias,
        activity_regularizer=reg,
    )(x)
    feat_T = layers.Reshape((num_features, num_features))(x)  # noqa: N806 (as in the example)
    # Apply affine transformation to input features
    return layers.Dot(axes=(2, 1))([inputs, feat_T])


def build_model():
    inputs = keras.Input(shape=(NUM_POINTS, 3))

    x = tnet(inputs, 3)
    x = conv_bn(x, 8)
    x = conv_bn(x, 8)
    x = tnet(x, 8)
    x = conv_bn(x, 8)
    x = conv_bn(x, 16)
    x = conv_bn(x, 64)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 32)
    x = layers.Dropout(0.3)(x)
    x = dense_bn(x, 16)
    x = layers.Dropout(0.3)(x)

    outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)

    model = keras.Model(inputs=inputs, outputs=outputs, name="pointnet")

    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        points = rng.uniform(-1.0, 1.0, size=(n, NUM_POINTS, 3))
        labels = rng.integers(0, NUM_CLASSES, size=(n,))
        return points, labels

    return split(128), split(64)
