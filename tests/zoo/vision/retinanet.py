# keras-io: examples/vision/retinanet.py
"""RetinaNet on synthetic COCO-shaped data in place of the download and the tf.data label
encoding: 64x64 images put through resnet.preprocess_input as the example does, and
encoded targets of the example's shape (per anchor: 4 box targets and a class id 0-79, -1
for background, -2 for ignored; 774 anchors for 64x64); ResNet50 backbone (imagenet
weights -> weights=None) cut to one block per stage and filters 64/128/256/512 ->
8/16/32/64, built by Keras's own ResNet builder (keras.src.applications.resnet), so the C3,
C4 and C5 outputs are conv3_block1_out, conv4_block1_out, conv5_block1_out; the FPN and
head width 256 -> 32; Keras 3 API: keras.losses.Loss and reduction "sum_over_batch_size"
for "auto", keras initializers for tf.initializers and tf.constant_initializer; RetinaNet
and RetinaNetLoss given get_config and registered for saving."""

import keras
import numpy as np
import tensorflow as tf
from keras.src.applications import resnet

PACKAGE = "zoo_retinanet"

IMAGE_SIZE = 64
NUM_ANCHORS = 9 * sum((IMAGE_SIZE // 2**i) ** 2 or 1 for i in range(3, 8))
WIDTH = 32


def ResNet50(include_top, input_shape, weights):  # noqa: N802 (Keras's name)
    def stack_fn(x):
        x = resnet.stack_residual_blocks_v1(x, 8, 1, stride1=1, name="conv2")
        x = resnet.stack_residual_blocks_v1(x, 16, 1, name="conv3")
        x = resnet.stack_residual_blocks_v1(x, 32, 1, name="conv4")
        return resnet.stack_residual_blocks_v1(x, 64, 1, name="conv5")

    return resnet.ResNet(
        stack_fn,
        False,
        True,
        name="resnet50",
        include_top=include_top,
        weights=weights,
        input_shape=input_shape,
    )


def get_backbone():
    """Builds ResNet50 with pre-trained imagenet weights"""
    backbone = ResNet50(include_top=False, input_shape=[None, None, 3], weights=None)
    c3_output, c4_output, c5_output = [
        backbone.get_layer(layer_name).output
        for layer_name in ["conv3_block1_out", "conv4_block1_out", "conv5_block1_out"]
    ]
    return keras.Model(inputs=[backbone.inputs], outputs=[c3_output, c4_output, c5_output])


class FeaturePyramid(keras.layers.Layer):
    """Builds the Feature Pyramid with the feature maps from the backbone.

    Attributes:
      num_classes: Number of classes in the dataset.
      backbone: The backbone to build the feature pyramid from.
        Currently supports ResNet50 only.
    """

    def __init__(self, backbone=None, **kwargs):
        super().__init__(name="FeaturePyramid", **kwargs)
        self.backbone = backbone if backbone else get_backbone()
        self.conv_c3_1x1 = keras.layers.Conv2D(WIDTH, 1, 1, "same")
        self.conv_c4_1x1 = keras.layers.Conv2D(WIDTH, 1, 1, "same")
        self.conv_c5_1x1 = keras.layers.Conv2D(WIDTH, 1, 1, "same")
        self.conv_c3_3x3 = keras.layers.Conv2D(WIDTH, 3, 1, "same")
        self.conv_c4_3x3 = keras.layers.Conv2D(WIDTH, 3, 1, "same")
        self.conv_c5_3x3 = keras.layers.Conv2D(WIDTH, 3, 1, "same")
        self.conv_c6_3x3 = keras.layers.Conv2D(WIDTH, 3, 2, "same")
        self.conv_c7_3x3 = keras.layers.Conv2D(WIDTH, 3, 2, "same")
        self.upsample_2x = keras.layers.UpSampling2D(2)

    def call(self, images, training=False):
        c3_output, c4_output, c5_output = self.backbone(images, training=training)
        p3_output = self.conv_c3_1x1(c3_output)
        p4_output = self.conv_c4_1x1(c4_output)
        p5_output = self.conv_c5_1x1(c5_output)
        p4_output = p4_output + self.upsample_2x(p5_output)
        p3_output = p3_output + self.upsample_2x(p4_output)
        p3_output = self.conv_c3_3x3(p3_output)
        p4_output = self.conv_c4_3x3(p4_output)
        p5_output = self.conv_c5_3x3(p5_output)
        p6_output = self.conv_c6_3x3(c5_output)
        p7_output = self.conv_c7_3x3(tf.nn.relu(p6_output))
        return p3_output, p4_output, p5_output, p6_output, p7_output


def build_head(output_filters, bias_init):
    """Builds the class/box predictions head.

    Args:
      output_filters: Number of convolution filters in the final layer.
      bias_init: Bias Initializer for the final convolution layer.

    Returns:
      A keras sequential model representing either the classification
        or the box regression head depending on `output_filters`.
    """
    head = keras.Sequential([keras.Input(shape=[None, None, WIDTH])])
    kernel_init = keras.initializers.RandomNormal(0.0, 0.01)
    for _ in range(4):
        head.add(keras.layers.Conv2D(WIDTH, 3, padding="same", kernel_initializer=kernel_init))
        head.add(keras.layers.ReLU())
    head.add(
        keras.layers.Conv2D(
            output_filters,
            3,
            1,
            padding="same",
            kernel_initializer=kernel_init,
            bias_initializer=bias_init,
        )
    )
    return head


@keras.saving.register_keras_serializable(package=PACKAGE)
class RetinaNet(keras.Model):
    """A subclassed Keras model implementing the RetinaNet architecture.

    Attributes:
      num_classes: Number of classes in the dataset.
      backbone: The backbone to build the feature pyramid from.
        Currently supports ResNet50 only.
    """

    def __init__(self, num_classes, backbone=None, **kwargs):
        super().__init__(name="RetinaNet", **kwargs)
        self.fpn = FeaturePyramid(backbone)
        self.num_classes = num_classes

        prior_probability = keras.initializers.Constant(-np.log((1 - 0.01) / 0.01))
        self.cls_head = build_head(9 * num_classes, prior_probability)
        self.box_head = build_head(9 * 4, "zeros")

    def get_config(self):
        return {"num_classes": self.num_classes}

    def call(self, image, training=False):
        features = self.fpn(image, training=training)
        N = tf.shape(image)[0]  # noqa: N806 (as in the example)
        cls_outputs = []
        box_outputs = []
        for feature in features:
            box_outputs.append(tf.reshape(self.box_head(feature), [N, -1, 4]))
            cls_outputs.append(tf.reshape(self.cls_head(feature), [N, -1, self.num_classes]))
        cls_outputs = tf.concat(cls_outputs, axis=1)
        box_outputs = tf.concat(box_outputs, axis=1)
        return tf.concat([box_outputs, cls_outputs], axis=-1)


class RetinaNetBoxLoss(keras.losses.Loss):
    """Implements Smooth L1 loss"""

    def __init__(self, delta):
        super().__init__(reduction="none", name="RetinaNetBoxLoss")
        self._delta = delta

    def call(self, y_true, y_pred):
        difference = y_true - y_pred
        absolute_difference = tf.abs(difference)
        squared_difference = difference**2
        loss = tf.where(
            tf.less(absolute_difference, self._delta),
            0.5 * squared_difference,
            absolute_difference - 0.5,
        )
        return tf.reduce_sum(loss, axis=-1)


class RetinaNetClassificationLoss(keras.losses.Loss):
    """Implements Focal loss"""

    def __init__(self, alpha, gamma):
        super().__init__(reduction="none", name="RetinaNetClassificationLoss")
        self._alpha = alpha
        self._gamma = gamma

    def call(self, y_true, y_pred):
        cross_entropy = tf.nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
        probs = tf.nn.sigmoid(y_pred)
        alpha = tf.where(tf.equal(y_true, 1.0), self._alpha, (1.0 - self._alpha))
        pt = tf.where(tf.equal(y_true, 1.0), probs, 1 - probs)
        loss = alpha * tf.pow(1.0 - pt, self._gamma) * cross_entropy
        return tf.reduce_sum(loss, axis=-1)


@keras.saving.register_keras_serializable(package=PACKAGE)
class RetinaNetLoss(keras.losses.Loss):
    """Wrapper to combine both the losses"""

    def __init__(self, num_classes=80, alpha=0.25, gamma=2.0, delta=1.0):
        super().__init__(reduction="sum_over_batch_size", name="RetinaNetLoss")
        self._clf_loss = RetinaNetClassificationLoss(alpha, gamma)
        self._box_loss = RetinaNetBoxLoss(delta)
        self._num_classes = num_classes
        self._alpha = alpha
        self._gamma = gamma
        self._delta = delta

    def get_config(self):
        return {
            "num_classes": self._num_classes,
            "alpha": self._alpha,
            "gamma": self._gamma,
            "delta": self._delta,
        }

    def call(self, y_true, y_pred):
        y_pred = tf.cast(y_pred, dtype=tf.float32)
        box_labels = y_true[:, :, :4]
        box_predictions = y_pred[:, :, :4]
        cls_labels = tf.one_hot(
            tf.cast(y_true[:, :, 4], dtype=tf.int32),
            depth=self._num_classes,
            dtype=tf.float32,
        )
        cls_predictions = y_pred[:, :, 4:]
        positive_mask = tf.cast(tf.greater(y_true[:, :, 4], -1.0), dtype=tf.float32)
        ignore_mask = tf.cast(tf.equal(y_true[:, :, 4], -2.0), dtype=tf.float32)
        clf_loss = self._clf_loss(cls_labels, cls_predictions)
        box_loss = self._box_loss(box_labels, box_predictions)
        clf_loss = tf.where(tf.equal(ignore_mask, 1.0), 0.0, clf_loss)
        box_loss = tf.where(tf.equal(positive_mask, 1.0), box_loss, 0.0)
        normalizer = tf.reduce_sum(positive_mask, axis=-1)
        clf_loss = tf.math.divide_no_nan(tf.reduce_sum(clf_loss, axis=-1), normalizer)
        box_loss = tf.math.divide_no_nan(tf.reduce_sum(box_loss, axis=-1), normalizer)
        loss = clf_loss + box_loss
        return loss


num_classes = 80

learning_rates = [2.5e-06, 0.000625, 0.00125, 0.0025, 0.00025, 2.5e-05]
learning_rate_boundaries = [125, 250, 500, 240000, 360000]


def build_model():
    learning_rate_fn = keras.optimizers.schedules.PiecewiseConstantDecay(
        boundaries=learning_rate_boundaries, values=learning_rates
    )
    resnet50_backbone = get_backbone()
    loss_fn = RetinaNetLoss(num_classes)
    model = RetinaNet(num_classes, resnet50_backbone)

    optimizer = keras.optimizers.SGD(learning_rate=learning_rate_fn, momentum=0.9)
    model.compile(loss=loss_fn, optimizer=optimizer)
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 255, size=(n, IMAGE_SIZE, IMAGE_SIZE, 3))
        images = keras.applications.resnet.preprocess_input(images.astype("float32"))
        box_targets = rng.normal(size=(n, NUM_ANCHORS, 4))
        draw = rng.uniform(size=(n, NUM_ANCHORS))
        cls_targets = np.where(
            draw < 0.05,
            rng.integers(0, num_classes, size=(n, NUM_ANCHORS)),
            np.where(draw < 0.1, -2, -1),
        )
        labels = np.concatenate([box_targets, cls_targets[..., None]], axis=-1)
        return images, labels.astype("float32")

    return split(128), split(64)
