# keras-io: examples/vision/siamese_network.py
"""Siamese network with a triplet loss on the Totally Looks Like dataset: synthetic float32
32x32x3 (anchor, positive, negative) images in [0, 1] in place of the download (200x200),
fit on the triplets alone (no labels) as the example does; ResNet50 with weights=None in
place of the ImageNet weights: a ResNet50 of keras.applications' own blocks and layer names,
widths divided by 8 and 1, 1, 1 and 2 blocks per stage in place of 3, 4, 6 and 3 (the real
one took 112 s for the 4 steps here, on a loaded machine), frozen up to conv5_block1_out as
the example does; Dense widths 64, 32 and 32 in place of 512, 256 and 256; DistanceLayer and
SiameseModel registered, SiameseModel with a get_config/from_config for its nested network,
so that the saved model reloads; SiameseModel marked built in __init__ (its train_step never
calls it, so Keras never builds it); validation data and the similarity check left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import Model, layers, metrics, ops, optimizers
from keras.applications import resnet

PACKAGE = "zoo_siamese_network"

target_shape = (32, 32)


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


def small_resnet50(weights=None, input_shape=None, include_top=False):
    """resnet.ResNet50(include_top=False), widths divided by 8, fewer blocks per stage."""
    img_input = layers.Input(shape=input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(8, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_residual_blocks_v1(x, 8, 1, stride1=1, name="conv2")
    x = stack_residual_blocks_v1(x, 16, 1, name="conv3")
    x = stack_residual_blocks_v1(x, 32, 1, name="conv4")
    x = stack_residual_blocks_v1(x, 64, 2, name="conv5")
    return Model(img_input, x, name="resnet50")


@keras.saving.register_keras_serializable(package=PACKAGE)
class DistanceLayer(layers.Layer):
    """
    This layer is responsible for computing the distance between the anchor
    embedding and the positive embedding, and the anchor embedding and the
    negative embedding.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def call(self, anchor, positive, negative):
        ap_distance = ops.sum(tf.square(anchor - positive), -1)
        an_distance = ops.sum(tf.square(anchor - negative), -1)
        return (ap_distance, an_distance)


@keras.saving.register_keras_serializable(package=PACKAGE)
class SiameseModel(Model):
    """The Siamese Network model with a custom training and testing loops.

    Computes the triplet loss using the three embeddings produced by the
    Siamese Network.

    The triplet loss is defined as:
       L(A, P, N) = max(‖f(A) - f(P)‖² - ‖f(A) - f(N)‖² + margin, 0)
    """

    def __init__(self, siamese_network, margin=0.5, **kwargs):
        super().__init__(**kwargs)
        self.siamese_network = siamese_network
        self.margin = margin
        self.loss_tracker = metrics.Mean(name="loss")
        self.built = True

    def call(self, inputs):
        return self.siamese_network(inputs)

    def train_step(self, data):
        # GradientTape is a context manager that records every operation that
        # you do inside. We are using it here to compute the loss so we can get
        # the gradients and apply them using the optimizer specified in
        # `compile()`.
        with tf.GradientTape() as tape:
            loss = self._compute_loss(data)

        # Storing the gradients of the loss function with respect to the
        # weights/parameters.
        gradients = tape.gradient(loss, self.siamese_network.trainable_weights)

        # Applying the gradients on the model using the specified optimizer
        self.optimizer.apply_gradients(zip(gradients, self.siamese_network.trainable_weights))  # noqa: B905 (as in the example)

        # Let's update and return the training loss metric.
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def test_step(self, data):
        loss = self._compute_loss(data)

        # Let's update and return the loss metric.
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def _compute_loss(self, data):
        # The output of the network is a tuple containing the distances
        # between the anchor and the positive example, and the anchor and
        # the negative example.
        ap_distance, an_distance = self.siamese_network(data)

        # Computing the Triplet Loss by subtracting both distances and
        # making sure we don't get a negative value.
        loss = ap_distance - an_distance
        loss = tf.maximum(loss + self.margin, 0.0)
        return loss

    @property
    def metrics(self):
        # We need to list our metrics here so the `reset_states()` can be
        # called automatically.
        return [self.loss_tracker]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "siamese_network": keras.saving.serialize_keras_object(self.siamese_network),
                "margin": self.margin,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["siamese_network"] = keras.saving.deserialize_keras_object(config["siamese_network"])
        return cls(**config)


def build_model():
    base_cnn = small_resnet50(weights=None, input_shape=target_shape + (3,), include_top=False)  # noqa: RUF005 (as in the example)

    flatten = layers.Flatten()(base_cnn.output)
    dense1 = layers.Dense(64, activation="relu")(flatten)
    dense1 = layers.BatchNormalization()(dense1)
    dense2 = layers.Dense(32, activation="relu")(dense1)
    dense2 = layers.BatchNormalization()(dense2)
    output = layers.Dense(32)(dense2)

    embedding = Model(base_cnn.input, output, name="Embedding")

    trainable = False
    for layer in base_cnn.layers:
        if layer.name == "conv5_block1_out":
            trainable = True
        layer.trainable = trainable

    anchor_input = layers.Input(name="anchor", shape=target_shape + (3,))  # noqa: RUF005 (as in the example)
    positive_input = layers.Input(name="positive", shape=target_shape + (3,))  # noqa: RUF005 (as in the example)
    negative_input = layers.Input(name="negative", shape=target_shape + (3,))  # noqa: RUF005 (as in the example)

    distances = DistanceLayer()(
        embedding(resnet.preprocess_input(anchor_input)),
        embedding(resnet.preprocess_input(positive_input)),
        embedding(resnet.preprocess_input(negative_input)),
    )

    siamese_network = Model(
        inputs=[anchor_input, positive_input, negative_input], outputs=distances
    )

    siamese_model = SiameseModel(siamese_network)
    siamese_model.compile(optimizer=optimizers.Adam(0.0001))
    return siamese_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = [rng.random((n, *target_shape, 3), dtype="float32") for _ in range(3)]
        return images, None

    return split(128), split(64)
