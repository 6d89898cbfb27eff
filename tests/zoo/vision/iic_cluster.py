# keras-io: examples/vision/IIC_cluster.py
"""Adapted: synthetic float32 images in [0, 255] (as image_dataset_from_directory gives them)
replace the toy_data download, fit with no labels as the example fits; image_h, image_w
256 -> 32; the ResNet50 backbone (ImageNet weights) is a ResNet of the same kind with
weights=None, two blocks per stage (3/4/6/3 -> 2/2/2/2) and filters 64/128/256/512 ->
8/16/32/64, built by Keras's own ResNet builder (keras.src.applications.resnet), so it
is built in build_model(). Keras 3: `layers.experimental.preprocessing` is `layers`;
`keras.losses.Reduction.AUTO` is "sum_over_batch_size". cluster_IIC and IIC_loss are
registered and get get_config()/from_config(), cluster_IIC also
get_compile_config()/compile_from_config() (Keras skips a custom compile() on load), and
cluster_IIC marks itself built (it is never called, so Keras would not). The TensorBoard
and checkpoint callbacks and the clustering inference after training are dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras.src.applications import resnet

PACKAGE = "zoo_iic_cluster"

sub_heads = 4
main_classes = 6
auxilary_classes = 10
image_h, image_w = 32, 32
batch_size = 8
learning_rate = 5e-6

# Source augument has only normalizing effect
source_augument = keras.Sequential(
    [
        keras.layers.Rescaling(1.0 / 255),
    ]
)

# Target augment can be augmented with respect to the dataset pattern
target_augment = keras.Sequential(
    [
        keras.layers.RandomFlip("horizontal"),
        keras.layers.RandomRotation(0.1),
        keras.layers.RandomZoom(0.4),
        keras.layers.Rescaling(1.0 / 255),
    ]
)


def ResNet50(include_top, input_shape):  # noqa: N802 (Keras's name)
    def stack_fn(x):
        x = resnet.stack_residual_blocks_v1(x, 8, 2, stride1=1, name="conv2")
        x = resnet.stack_residual_blocks_v1(x, 16, 2, name="conv3")
        x = resnet.stack_residual_blocks_v1(x, 32, 2, name="conv4")
        return resnet.stack_residual_blocks_v1(x, 64, 2, name="conv5")

    return resnet.ResNet(
        stack_fn,
        preact=False,
        use_bias=True,
        name="resnet50",
        include_top=include_top,
        weights=None,
        input_shape=input_shape,
    )


# Backbone Network
def resnet_backbone(subheads, classes, auxilary_branch=True, auxilary_classes=10):
    base_full = ResNet50(include_top=False, input_shape=(image_h, image_w, 3))
    base_outp = base_full.output
    gpool = keras.layers.GlobalAveragePooling2D()(base_outp)
    outmaps = []
    auxmaps = []
    for _w in range(subheads):
        main_out = keras.layers.Dense(classes, activation="softmax")(gpool)
        outmaps.append(main_out)
    if auxilary_branch:
        for _w in range(subheads):
            aux_out = keras.layers.Dense(auxilary_classes, activation="softmax")(gpool)
            auxmaps.append(aux_out)
        fmodel = keras.models.Model(base_full.input, [outmaps, auxmaps], name="IIC_aux_node")
        return fmodel, auxilary_branch

    else:
        fmodel = keras.models.Model(base_full.input, outmaps, name="IIC_main_node")
        return fmodel, auxilary_branch


# Clustering network
@keras.saving.register_keras_serializable(package=PACKAGE)
class cluster_IIC(keras.models.Model):  # noqa: N801 (as in the example)
    def __init__(self, backbone, auxilary_flag=False):
        super().__init__()
        self.backbone = backbone
        self.auxilary = auxilary_flag
        # Keras 3: the model has no call of its own, so nothing builds it.
        self.built = True

    def compile(self, optimizer, loss):
        super().compile()
        self.optimizer_fn = optimizer
        self.loss_fn = loss

    def train_step(self, x):
        xin, xin_ = source_augument(x), target_augment(x)
        with tf.GradientTape() as t:
            if self.auxilary:
                # trains with auxilary branch combined
                m1, a1 = self.backbone(xin)
                m2, a2 = self.backbone(xin_)
                iicm = tf.reduce_mean([self.loss_fn(x, y) for (x, y) in zip(m1, m2)])  # noqa: B905
                iica = tf.reduce_mean([self.loss_fn(x, y) for (x, y) in zip(a1, a2)])  # noqa: B905
                iicc = iicm + iica
            else:
                m1 = self.backbone(xin)
                m2 = self.backbone(xin_)
                iicc = tf.reduce_mean([self.loss_fn(x, y) for (x, y) in zip(m1, m2)])  # noqa: B905

        grad = t.gradient(iicc, self.backbone.trainable_weights)
        self.optimizer_fn.apply_gradients(zip(grad, self.backbone.trainable_weights))  # noqa: B905
        return {"loss": iicc}

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "auxilary_flag": self.auxilary,
        }

    @classmethod
    def from_config(cls, config):
        return cls(
            backbone=keras.saving.deserialize_keras_object(config["backbone"]),
            auxilary_flag=config["auxilary_flag"],
        )

    def get_compile_config(self):
        return {
            "optimizer": keras.saving.serialize_keras_object(self.optimizer_fn),
            "loss": keras.saving.serialize_keras_object(self.loss_fn),
        }

    def compile_from_config(self, config):
        self.compile(
            optimizer=keras.saving.deserialize_keras_object(config["optimizer"]),
            loss=keras.saving.deserialize_keras_object(config["loss"]),
        )
        self.optimizer_fn.build(self.backbone.trainable_weights)


@keras.saving.register_keras_serializable(package=PACKAGE)
class IIC_loss(keras.losses.Loss):  # noqa: N801 (as in the example)
    def __init__(self, epsilon=1e-6, lamb=1.0, reduction="sum_over_batch_size"):
        super().__init__(reduction=reduction)
        self.epsilon = epsilon
        self.lamb = lamb

    def call(self, x, x_):
        c = tf.shape(x)[-1]  # class labels
        i = tf.reshape(x, (-1, c, 1))
        j = tf.reshape(x_, (-1, 1, c))
        j_prob = tf.matmul(i, j)  # compute joint probability
        j_prob = tf.reduce_sum(j_prob, axis=0)  # sum the sub_heads
        j_prob = (j_prob + tf.transpose(j_prob)) / 2  # impose invariant compute
        j_prob = tf.clip_by_value(j_prob, self.epsilon, 1e9)
        j_prob /= tf.reduce_sum(j_prob)
        pi_ = tf.reduce_sum(j_prob, axis=0)
        pi_ = tf.reshape(pi_, (-1, 1))
        pi_ = tf.broadcast_to(pi_, (c, c))
        pj_ = tf.reduce_sum(j_prob, axis=1)
        pj_ = tf.reshape(pj_, (1, -1))
        pj_ = tf.broadcast_to(pj_, (c, c))
        loss_ = -tf.reduce_sum(j_prob * (tf.math.log(j_prob) - tf.math.log(pi_) - tf.math.log(pj_)))
        return loss_

    def get_config(self):
        return {"epsilon": self.epsilon, "lamb": self.lamb, "reduction": self.reduction}


def build_model():
    backbone, auxilary_flag = resnet_backbone(
        subheads=sub_heads,
        classes=main_classes,
        auxilary_branch=True,
        auxilary_classes=auxilary_classes,
    )
    cluster_model = cluster_IIC(backbone, auxilary_flag=auxilary_flag)
    loss = IIC_loss()
    optimizer = keras.optimizers.Adam(learning_rate)
    cluster_model.compile(optimizer=optimizer, loss=loss)
    return cluster_model


def load_data():
    rng = np.random.default_rng(0)

    def images(n):
        return rng.integers(0, 256, size=(n, image_h, image_w, 3)).astype("float32")

    return (images(128), None), (images(64), None)
