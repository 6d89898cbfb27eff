# keras-io: examples/vision/semantic_image_clustering.py
"""The example's first phase, the self-supervised RepresentationLearner (its own
train_step and test_step, fit on images with no labels), on synthetic CIFAR-10-shaped
images (uint8 range) in place of the download; ResNet50V2 encoder (weights=None) cut to a
ResNetV2 of two blocks per stage (3/4/6/3 -> 2/2/2/2) and filters 64/128/256/512 ->
8/16/32/64, built by Keras's own ResNet builder (keras.src.applications.resnet);
representation_dim 512 -> 32, projection_units 128 -> 16; the Normalization layer adapted
on the synthetic training images; tensorflow_addons AdamW -> keras.optimizers.AdamW and
keras.experimental.CosineDecay -> keras.optimizers.schedules.CosineDecay (same settings);
layers.experimental.preprocessing -> layers; RepresentationLearner given get_config and
from_config and registered for saving. The clustering phase (a second model trained on
nearest neighbours of the learned embeddings) is not part of this file."""

import keras
import numpy as np
import tensorflow as tf
from keras.src.applications import resnet
from tensorflow.keras import layers

PACKAGE = "zoo_semantic_image_clustering"

input_shape = (32, 32, 3)

target_size = 32  # Resize the input images.
representation_dim = 32  # The dimensions of the features vector.
projection_units = 16  # The projection head of the representation learner.


def synthetic_images(rng, n):
    return rng.integers(0, 256, size=(n, *input_shape)).astype("uint8")


data_preprocessing = keras.Sequential(
    [
        layers.Resizing(target_size, target_size),
        layers.Normalization(),
    ]
)

data_augmentation = keras.Sequential(
    [
        layers.RandomTranslation(
            height_factor=(-0.2, 0.2), width_factor=(-0.2, 0.2), fill_mode="nearest"
        ),
        layers.RandomFlip(mode="horizontal"),
        layers.RandomRotation(factor=0.15, fill_mode="nearest"),
        layers.RandomZoom(height_factor=(-0.3, 0.1), width_factor=(-0.3, 0.1), fill_mode="nearest"),
    ]
)


def ResNet50V2(include_top, weights, pooling):  # noqa: N802 (Keras's name)
    def stack_fn(x):
        x = resnet.stack_residual_blocks_v2(x, 8, 2, name="conv2")
        x = resnet.stack_residual_blocks_v2(x, 16, 2, name="conv3")
        x = resnet.stack_residual_blocks_v2(x, 32, 2, name="conv4")
        return resnet.stack_residual_blocks_v2(x, 64, 2, stride1=1, name="conv5")

    return resnet.ResNet(
        stack_fn,
        True,
        True,
        name="resnet50v2",
        include_top=include_top,
        weights=weights,
        pooling=pooling,
    )


def create_encoder(representation_dim):
    encoder = keras.Sequential(
        [
            ResNet50V2(include_top=False, weights=None, pooling="avg"),
            layers.Dense(representation_dim),
        ]
    )
    return encoder


@keras.saving.register_keras_serializable(package=PACKAGE)
class RepresentationLearner(keras.Model):
    def __init__(
        self,
        encoder,
        projection_units,
        num_augmentations,
        temperature=1.0,
        dropout_rate=0.1,
        l2_normalize=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.encoder = encoder
        # Create projection head.
        self.projector = keras.Sequential(
            [
                layers.Dropout(dropout_rate),
                layers.Dense(units=projection_units, use_bias=False),
                layers.BatchNormalization(),
                layers.ReLU(),
            ]
        )
        self.num_augmentations = num_augmentations
        self.temperature = temperature
        self.l2_normalize = l2_normalize
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.projection_units = projection_units
        self.dropout_rate = dropout_rate

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "projection_units": self.projection_units,
                "num_augmentations": self.num_augmentations,
                "temperature": self.temperature,
                "dropout_rate": self.dropout_rate,
                "l2_normalize": self.l2_normalize,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    @property
    def metrics(self):
        return [self.loss_tracker]

    def compute_contrastive_loss(self, feature_vectors, batch_size):
        num_augmentations = tf.shape(feature_vectors)[0] // batch_size
        if self.l2_normalize:
            feature_vectors = tf.math.l2_normalize(feature_vectors, -1)
        # The logits shape is [num_augmentations * batch_size, num_augmentations * batch_size].
        logits = (
            tf.linalg.matmul(feature_vectors, feature_vectors, transpose_b=True) / self.temperature
        )
        # Apply log-max trick for numerical stability.
        logits_max = tf.math.reduce_max(logits, axis=1)
        logits = logits - logits_max
        # The shape of targets is
        # [num_augmentations * batch_size, num_augmentations * batch_size].
        # targets is a matrix consits of num_augmentations submatrices of shape
        # [batch_size * batch_size].
        # Each [batch_size * batch_size] submatrix is an identity matrix (diagonal entries
        # are ones).
        targets = tf.tile(tf.eye(batch_size), [num_augmentations, num_augmentations])
        # Compute cross entropy loss
        return keras.losses.categorical_crossentropy(
            y_true=targets, y_pred=logits, from_logits=True
        )

    def call(self, inputs):
        # Preprocess the input images.
        preprocessed = data_preprocessing(inputs)
        # Create augmented versions of the images.
        augmented = []
        for _ in range(self.num_augmentations):
            augmented.append(data_augmentation(preprocessed))
        augmented = layers.Concatenate(axis=0)(augmented)
        # Generate embedding representations of the images.
        features = self.encoder(augmented)
        # Apply projection head.
        return self.projector(features)

    def train_step(self, inputs):
        batch_size = tf.shape(inputs)[0]
        # Run the forward pass and compute the contrastive loss
        with tf.GradientTape() as tape:
            feature_vectors = self(inputs, training=True)
            loss = self.compute_contrastive_loss(feature_vectors, batch_size)
        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars, strict=False))
        # Update loss tracker metric
        self.loss_tracker.update_state(loss)
        # Return a dict mapping metric names to current value
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, inputs):
        batch_size = tf.shape(inputs)[0]
        feature_vectors = self(inputs, training=False)
        loss = self.compute_contrastive_loss(feature_vectors, batch_size)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


def build_model():
    # Compute the mean and the variance from the data for normalization.
    data_preprocessing.layers[-1].adapt(synthetic_images(np.random.default_rng(0), 128))

    # Create vision encoder.
    encoder = create_encoder(representation_dim)
    # Create representation learner.
    representation_learner = RepresentationLearner(
        encoder, projection_units, num_augmentations=2, temperature=0.1
    )
    # Create a a Cosine decay learning rate scheduler.
    lr_scheduler = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.001, decay_steps=500, alpha=0.1
    )
    # Compile the model.
    representation_learner.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=lr_scheduler, weight_decay=0.0001),
    )
    return representation_learner


def load_data():
    rng = np.random.default_rng(0)
    return (synthetic_images(rng, 128), None), (synthetic_images(rng, 64), None)
