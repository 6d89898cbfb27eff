# keras-io: examples/vision/nnclr.py
"""NNCLR self-supervised pretraining with an online linear probe on STL-10: synthetic uint8
32x32x3 images in place of the TFDS download (96x96): a training dataset of unbatched
((unlabelled image, -1), (labelled image, label in 0..9)) pairs, as the example zips its
unlabelled and labelled datasets (there in batches of 500 and 25, here both batched
alike), and a labelled test set; width 32 in place of 128 and queue_size 256 in place of
10000; tf.cast(tf.shape(...)[0], tf.float32) in place of tf.shape(..., out_type=
tf.float32), which TensorFlow 2.21 refuses; RandomResizedCrop, RandomBrightness and
NNCLR take **kwargs, are registered and have a get_config, and NNCLR a
get_compile_config/compile_from_config for its two optimizers, so that the saved model
reloads compiled; NNCLR marked built in __init__ (it has no call); the fine-tuning run
after pretraining left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_nnclr"

temperature = 0.1
queue_size = 256
contrastive_augmenter = {
    "brightness": 0.5,
    "name": "contrastive_augmenter",
    "scale": (0.2, 1.0),
}
classification_augmenter = {
    "brightness": 0.2,
    "name": "classification_augmenter",
    "scale": (0.5, 1.0),
}
input_shape = (32, 32, 3)
width = 32


@keras.saving.register_keras_serializable(package=PACKAGE)
class RandomResizedCrop(layers.Layer):
    def __init__(self, scale, ratio, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.ratio = ratio
        self.log_ratio = (tf.math.log(ratio[0]), tf.math.log(ratio[1]))

    def call(self, images):
        batch_size = tf.shape(images)[0]
        height = tf.shape(images)[1]
        width = tf.shape(images)[2]

        random_scales = tf.random.uniform((batch_size,), self.scale[0], self.scale[1])
        random_ratios = tf.exp(
            tf.random.uniform((batch_size,), self.log_ratio[0], self.log_ratio[1])
        )

        new_heights = tf.clip_by_value(tf.sqrt(random_scales / random_ratios), 0, 1)
        new_widths = tf.clip_by_value(tf.sqrt(random_scales * random_ratios), 0, 1)
        height_offsets = tf.random.uniform((batch_size,), 0, 1 - new_heights)
        width_offsets = tf.random.uniform((batch_size,), 0, 1 - new_widths)

        bounding_boxes = tf.stack(
            [
                height_offsets,
                width_offsets,
                height_offsets + new_heights,
                width_offsets + new_widths,
            ],
            axis=1,
        )
        images = tf.image.crop_and_resize(
            images, bounding_boxes, tf.range(batch_size), (height, width)
        )
        return images

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale, "ratio": self.ratio})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class RandomBrightness(layers.Layer):
    def __init__(self, brightness, **kwargs):
        super().__init__(**kwargs)
        self.brightness = brightness

    def blend(self, images_1, images_2, ratios):
        return tf.clip_by_value(ratios * images_1 + (1.0 - ratios) * images_2, 0, 1)

    def random_brightness(self, images):
        # random interpolation/extrapolation between the image and darkness
        return self.blend(
            images,
            0,
            tf.random.uniform(
                (tf.shape(images)[0], 1, 1, 1), 1 - self.brightness, 1 + self.brightness
            ),
        )

    def call(self, images):
        images = self.random_brightness(images)
        return images

    def get_config(self):
        config = super().get_config()
        config.update({"brightness": self.brightness})
        return config


def augmenter(brightness, name, scale):
    return keras.Sequential(
        [
            layers.Input(shape=input_shape),
            layers.Rescaling(1 / 255),
            layers.RandomFlip("horizontal"),
            RandomResizedCrop(scale=scale, ratio=(3 / 4, 4 / 3)),
            RandomBrightness(brightness=brightness),
        ],
        name=name,
    )


def encoder():
    return keras.Sequential(
        [
            layers.Input(shape=input_shape),
            layers.Conv2D(width, kernel_size=3, strides=2, activation="relu"),
            layers.Conv2D(width, kernel_size=3, strides=2, activation="relu"),
            layers.Conv2D(width, kernel_size=3, strides=2, activation="relu"),
            layers.Conv2D(width, kernel_size=3, strides=2, activation="relu"),
            layers.Flatten(),
            layers.Dense(width, activation="relu"),
        ],
        name="encoder",
    )


@keras.saving.register_keras_serializable(package=PACKAGE)
class NNCLR(keras.Model):
    def __init__(self, temperature, queue_size, **kwargs):
        super().__init__(**kwargs)
        self.queue_size = queue_size
        self.probe_accuracy = keras.metrics.SparseCategoricalAccuracy()
        self.correlation_accuracy = keras.metrics.SparseCategoricalAccuracy()
        self.contrastive_accuracy = keras.metrics.SparseCategoricalAccuracy()
        self.probe_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        self.contrastive_augmenter = augmenter(**contrastive_augmenter)
        self.classification_augmenter = augmenter(**classification_augmenter)
        self.encoder = encoder()
        self.projection_head = keras.Sequential(
            [
                layers.Input(shape=(width,)),
                layers.Dense(width, activation="relu"),
                layers.Dense(width),
            ],
            name="projection_head",
        )
        self.linear_probe = keras.Sequential(
            [layers.Input(shape=(width,)), layers.Dense(10)], name="linear_probe"
        )
        self.temperature = temperature

        feature_dimensions = self.encoder.output_shape[1]
        self.feature_queue = tf.Variable(
            tf.math.l2_normalize(tf.random.normal(shape=(queue_size, feature_dimensions)), axis=1),
            trainable=False,
        )
        # Keras 3: the model has no call of its own, so nothing builds it.
        self.built = True

    def compile(self, contrastive_optimizer, probe_optimizer, **kwargs):
        super().compile(**kwargs)
        self.contrastive_optimizer = contrastive_optimizer
        self.probe_optimizer = probe_optimizer

    def nearest_neighbour(self, projections):
        support_similarities = tf.matmul(projections, self.feature_queue, transpose_b=True)
        nn_projections = tf.gather(
            self.feature_queue, tf.argmax(support_similarities, axis=1), axis=0
        )
        return projections + tf.stop_gradient(nn_projections - projections)

    def update_contrastive_accuracy(self, features_1, features_2):
        features_1 = tf.math.l2_normalize(features_1, axis=1)
        features_2 = tf.math.l2_normalize(features_2, axis=1)
        similarities = tf.matmul(features_1, features_2, transpose_b=True)

        batch_size = tf.shape(features_1)[0]
        contrastive_labels = tf.range(batch_size)
        self.contrastive_accuracy.update_state(
            tf.concat([contrastive_labels, contrastive_labels], axis=0),
            tf.concat([similarities, tf.transpose(similarities)], axis=0),
        )

    def update_correlation_accuracy(self, features_1, features_2):
        features_1 = (features_1 - tf.reduce_mean(features_1, axis=0)) / tf.math.reduce_std(
            features_1, axis=0
        )
        features_2 = (features_2 - tf.reduce_mean(features_2, axis=0)) / tf.math.reduce_std(
            features_2, axis=0
        )

        batch_size = tf.cast(tf.shape(features_1)[0], tf.float32)
        cross_correlation = tf.matmul(features_1, features_2, transpose_a=True) / batch_size

        feature_dim = tf.shape(features_1)[1]
        correlation_labels = tf.range(feature_dim)
        self.correlation_accuracy.update_state(
            tf.concat([correlation_labels, correlation_labels], axis=0),
            tf.concat([cross_correlation, tf.transpose(cross_correlation)], axis=0),
        )

    def contrastive_loss(self, projections_1, projections_2):
        projections_1 = tf.math.l2_normalize(projections_1, axis=1)
        projections_2 = tf.math.l2_normalize(projections_2, axis=1)

        similarities_1_2_1 = (
            tf.matmul(self.nearest_neighbour(projections_1), projections_2, transpose_b=True)
            / self.temperature
        )
        similarities_1_2_2 = (
            tf.matmul(projections_2, self.nearest_neighbour(projections_1), transpose_b=True)
            / self.temperature
        )

        similarities_2_1_1 = (
            tf.matmul(self.nearest_neighbour(projections_2), projections_1, transpose_b=True)
            / self.temperature
        )
        similarities_2_1_2 = (
            tf.matmul(projections_1, self.nearest_neighbour(projections_2), transpose_b=True)
            / self.temperature
        )

        batch_size = tf.shape(projections_1)[0]
        contrastive_labels = tf.range(batch_size)
        loss = keras.losses.sparse_categorical_crossentropy(
            tf.concat(
                [
                    contrastive_labels,
                    contrastive_labels,
                    contrastive_labels,
                    contrastive_labels,
                ],
                axis=0,
            ),
            tf.concat(
                [
                    similarities_1_2_1,
                    similarities_1_2_2,
                    similarities_2_1_1,
                    similarities_2_1_2,
                ],
                axis=0,
            ),
            from_logits=True,
        )

        self.feature_queue.assign(
            tf.concat([projections_1, self.feature_queue[:-batch_size]], axis=0)
        )
        return loss

    def train_step(self, data):
        (unlabeled_images, _), (labeled_images, labels) = data
        images = tf.concat((unlabeled_images, labeled_images), axis=0)
        augmented_images_1 = self.contrastive_augmenter(images)
        augmented_images_2 = self.contrastive_augmenter(images)

        with tf.GradientTape() as tape:
            features_1 = self.encoder(augmented_images_1)
            features_2 = self.encoder(augmented_images_2)
            projections_1 = self.projection_head(features_1)
            projections_2 = self.projection_head(features_2)
            contrastive_loss = self.contrastive_loss(projections_1, projections_2)
        gradients = tape.gradient(
            contrastive_loss,
            self.encoder.trainable_weights + self.projection_head.trainable_weights,
        )
        self.contrastive_optimizer.apply_gradients(
            zip(  # noqa: B905
                gradients,
                self.encoder.trainable_weights + self.projection_head.trainable_weights,
            )
        )
        self.update_contrastive_accuracy(features_1, features_2)
        self.update_correlation_accuracy(features_1, features_2)
        preprocessed_images = self.classification_augmenter(labeled_images)

        with tf.GradientTape() as tape:
            features = self.encoder(preprocessed_images)
            class_logits = self.linear_probe(features)
            probe_loss = self.probe_loss(labels, class_logits)
        gradients = tape.gradient(probe_loss, self.linear_probe.trainable_weights)
        self.probe_optimizer.apply_gradients(zip(gradients, self.linear_probe.trainable_weights))  # noqa: B905
        self.probe_accuracy.update_state(labels, class_logits)

        return {
            "c_loss": contrastive_loss,
            "c_acc": self.contrastive_accuracy.result(),
            "r_acc": self.correlation_accuracy.result(),
            "p_loss": probe_loss,
            "p_acc": self.probe_accuracy.result(),
        }

    def test_step(self, data):
        labeled_images, labels = data

        preprocessed_images = self.classification_augmenter(labeled_images, training=False)
        features = self.encoder(preprocessed_images, training=False)
        class_logits = self.linear_probe(features, training=False)
        probe_loss = self.probe_loss(labels, class_logits)

        self.probe_accuracy.update_state(labels, class_logits)
        return {"p_loss": probe_loss, "p_acc": self.probe_accuracy.result()}

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "queue_size": self.queue_size})
        return config

    def get_compile_config(self):
        return {
            "contrastive_optimizer": keras.saving.serialize_keras_object(
                self.contrastive_optimizer
            ),
            "probe_optimizer": keras.saving.serialize_keras_object(self.probe_optimizer),
        }

    def compile_from_config(self, config):
        self.compile(
            contrastive_optimizer=keras.saving.deserialize_keras_object(
                config["contrastive_optimizer"]
            ),
            probe_optimizer=keras.saving.deserialize_keras_object(config["probe_optimizer"]),
        )


def build_model():
    model = NNCLR(temperature=temperature, queue_size=queue_size)
    model.compile(
        contrastive_optimizer=keras.optimizers.Adam(),
        probe_optimizer=keras.optimizers.Adam(),
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def images(n):
        return rng.integers(0, 256, size=(n, *input_shape)).astype("uint8")

    unlabeled_train_dataset = tf.data.Dataset.from_tensor_slices(
        (images(128), np.full(128, -1, dtype="int64"))
    )
    labeled_train_dataset = tf.data.Dataset.from_tensor_slices(
        (images(128), rng.integers(0, 10, size=128))
    )
    train_dataset = tf.data.Dataset.zip((unlabeled_train_dataset, labeled_train_dataset))
    test = (images(64), rng.integers(0, 10, size=64))
    return train_dataset, test
