# keras-io: examples/vision/simsiam.py
"""Adapted: synthetic CIFAR-10-shaped uint8 images replace the download; the two augmented
versions are made once, in load_data, by the example's own pipeline (custom_augment over
two copies shuffled with the same seed, so each pair is one image) and returned as NumPy
arrays: the first version as x and the second as y, the pair Keras reads from the
example's zipped dataset. The ResNet20 backbone came from a module the example fetches
with wget (keras-idiomatic-programmer's resnet_cifar10_v2.py, not part of the example): a
small ResNet of the same kind (its stem, and its learner of three groups of pre-activation
1x1-3x3-1x1 bottleneck blocks, a projection block and NUM_BLOCKS identity blocks each) is
written here with keras.layers, with filters 16/64/128 -> 4/8/16 (stem 16 -> 4);
PROJECT_DIM 2048 -> 32, LATENT_DIM 512 -> 8; the cosine decay's num_training_samples is
the 128 synthetic images; the EarlyStopping callback is callbacks(). Keras 3:
`layers.experimental.preprocessing.Rescaling` is `layers.Rescaling`,
`tf.keras.experimental.CosineDecay` is `keras.optimizers.schedules.CosineDecay` (same
settings). SimSiam is registered, gets get_config()/from_config() and marks itself built
(it is never called, so Keras would not). The plots and the linear evaluation after
pretraining are dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, regularizers

PACKAGE = "zoo_simsiam"

AUTO = tf.data.AUTOTUNE
BATCH_SIZE = 128
EPOCHS = 5
CROP_TO = 32
SEED = 26

PROJECT_DIM = 32
LATENT_DIM = 8
WEIGHT_DECAY = 0.0005


def flip_random_crop(image):
    # With random crops we also apply horizontal flipping.
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_crop(image, (CROP_TO, CROP_TO, 3))
    return image


def color_jitter(x, strength=[0.4, 0.4, 0.4, 0.1]):  # noqa: B006 (as in the example)
    x = tf.image.random_brightness(x, max_delta=0.8 * strength[0])
    x = tf.image.random_contrast(x, lower=1 - 0.8 * strength[1], upper=1 + 0.8 * strength[1])
    x = tf.image.random_saturation(x, lower=1 - 0.8 * strength[2], upper=1 + 0.8 * strength[2])
    x = tf.image.random_hue(x, max_delta=0.2 * strength[3])
    # Affine transformations can disturb the natural range of
    # RGB images, hence this is needed.
    x = tf.clip_by_value(x, 0, 255)
    return x


def color_drop(x):
    x = tf.image.rgb_to_grayscale(x)
    x = tf.tile(x, [1, 1, 3])
    return x


def random_apply(func, x, p):
    if tf.random.uniform([], minval=0, maxval=1) < p:
        return func(x)
    else:
        return x


def custom_augment(image):
    # As discussed in the SimCLR paper, the series of augmentation
    # transformations (except for random crops) need to be applied
    # randomly to impose translational invariance.
    image = flip_random_crop(image)
    image = random_apply(color_jitter, image, p=0.8)
    image = random_apply(color_drop, image, p=0.2)
    return image


# A small ResNet of the kind of resnet_cifar10_v2 (stem, learner), which the example
# imports from a module it downloads.
def stem(inputs):
    x = layers.Conv2D(
        4, kernel_size=(3, 3), strides=(1, 1), padding="same", kernel_initializer="he_normal"
    )(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    return x


def learner(x, n_blocks):
    x = residual_group(x, 4, n_blocks, strides=(1, 1), n=4)
    x = residual_group(x, 8, n_blocks, n=2)
    x = residual_group(x, 16, n_blocks, n=2)
    return x


def residual_group(x, n_filters, n_blocks, strides=(2, 2), n=2):
    x = projection_block(x, n_filters, strides=strides, n=n)
    for _ in range(n_blocks):
        x = identity_block(x, n_filters, n)
    return x


def identity_block(x, n_filters, n=2):
    shortcut = x
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(n_filters, (1, 1), strides=(1, 1), kernel_initializer="he_normal")(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(
        n_filters, (3, 3), strides=(1, 1), padding="same", kernel_initializer="he_normal"
    )(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(n_filters * n, (1, 1), strides=(1, 1), kernel_initializer="he_normal")(x)
    x = layers.Add()([x, shortcut])
    return x


def projection_block(x, n_filters, strides=(2, 2), n=2):
    shortcut = layers.Conv2D(
        n_filters * n, (1, 1), strides=strides, kernel_initializer="he_normal"
    )(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(n_filters, (1, 1), strides=(1, 1), kernel_initializer="he_normal")(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(
        n_filters, (3, 3), strides=strides, padding="same", kernel_initializer="he_normal"
    )(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(n_filters * n, (1, 1), strides=(1, 1), kernel_initializer="he_normal")(x)
    x = layers.Add()([shortcut, x])
    return x


N = 2
DEPTH = N * 9 + 2
NUM_BLOCKS = ((DEPTH - 2) // 9) - 1


def get_encoder():
    # Input and backbone.
    inputs = layers.Input((CROP_TO, CROP_TO, 3))
    x = layers.Rescaling(scale=1.0 / 127.5, offset=-1)(inputs)
    x = stem(x)
    x = learner(x, NUM_BLOCKS)
    x = layers.GlobalAveragePooling2D(name="backbone_pool")(x)

    # Projection head.
    x = layers.Dense(PROJECT_DIM, use_bias=False, kernel_regularizer=regularizers.l2(WEIGHT_DECAY))(
        x
    )
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Dense(PROJECT_DIM, use_bias=False, kernel_regularizer=regularizers.l2(WEIGHT_DECAY))(
        x
    )
    outputs = layers.BatchNormalization()(x)
    return keras.Model(inputs, outputs, name="encoder")


def get_predictor():
    model = keras.Sequential(
        [
            # Note the AutoEncoder-like structure.
            layers.Input((PROJECT_DIM,)),
            layers.Dense(
                LATENT_DIM,
                use_bias=False,
                kernel_regularizer=regularizers.l2(WEIGHT_DECAY),
            ),
            layers.ReLU(),
            layers.BatchNormalization(),
            layers.Dense(PROJECT_DIM),
        ],
        name="predictor",
    )
    return model


def compute_loss(p, z):
    # The authors of SimSiam emphasize the impact of
    # the `stop_gradient` operator in the paper as it
    # has an important role in the overall optimization.
    z = tf.stop_gradient(z)
    p = tf.math.l2_normalize(p, axis=1)
    z = tf.math.l2_normalize(z, axis=1)
    # Negative cosine similarity (minimizing this is
    # equivalent to maximizing the similarity).
    return -tf.reduce_mean(tf.reduce_sum((p * z), axis=1))


@keras.saving.register_keras_serializable(package=PACKAGE)
class SimSiam(keras.Model):
    def __init__(self, encoder, predictor):
        super().__init__()
        self.encoder = encoder
        self.predictor = predictor
        self.loss_tracker = keras.metrics.Mean(name="loss")
        # Keras 3: the model has no call of its own, so nothing builds it.
        self.built = True

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, data):
        # Unpack the data.
        ds_one, ds_two = data

        # Forward pass through the encoder and predictor.
        with tf.GradientTape() as tape:
            z1, z2 = self.encoder(ds_one), self.encoder(ds_two)
            p1, p2 = self.predictor(z1), self.predictor(z2)
            # Note that here we are enforcing the network to match
            # the representations of two differently augmented batches
            # of data.
            loss = compute_loss(p1, z2) / 2 + compute_loss(p2, z1) / 2

        # Compute gradients and update the parameters.
        learnable_params = self.encoder.trainable_variables + self.predictor.trainable_variables
        gradients = tape.gradient(loss, learnable_params)
        self.optimizer.apply_gradients(zip(gradients, learnable_params))  # noqa: B905

        # Monitor loss.
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "predictor": keras.saving.serialize_keras_object(self.predictor),
        }

    @classmethod
    def from_config(cls, config):
        return cls(
            encoder=keras.saving.deserialize_keras_object(config["encoder"]),
            predictor=keras.saving.deserialize_keras_object(config["predictor"]),
        )


NUM_TRAINING_SAMPLES = 128


def build_model():
    # Create a cosine decay learning scheduler.
    num_training_samples = NUM_TRAINING_SAMPLES
    steps = EPOCHS * (num_training_samples // BATCH_SIZE)
    lr_decayed_fn = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.03, decay_steps=steps
    )

    # Compile model and start training.
    simsiam = SimSiam(get_encoder(), get_predictor())
    simsiam.compile(optimizer=keras.optimizers.SGD(lr_decayed_fn, momentum=0.6))
    return simsiam


def callbacks():
    # Create an early stopping callback.
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="loss", patience=5, restore_best_weights=True
    )
    return [early_stopping]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 32, 32, 3)).astype("uint8")
        ssl_ds_one = tf.data.Dataset.from_tensor_slices(x)
        ssl_ds_one = (
            ssl_ds_one.shuffle(1024, seed=SEED)
            .map(custom_augment, num_parallel_calls=AUTO)
            .batch(BATCH_SIZE)
            .prefetch(AUTO)
        )

        ssl_ds_two = tf.data.Dataset.from_tensor_slices(x)
        ssl_ds_two = (
            ssl_ds_two.shuffle(1024, seed=SEED)
            .map(custom_augment, num_parallel_calls=AUTO)
            .batch(BATCH_SIZE)
            .prefetch(AUTO)
        )

        # We then zip both of these datasets.
        ssl_ds = tf.data.Dataset.zip((ssl_ds_one, ssl_ds_two))
        pairs = list(ssl_ds.as_numpy_iterator())
        return np.concatenate([a for a, _ in pairs]), np.concatenate([b for _, b in pairs])

    return split(NUM_TRAINING_SAMPLES), split(64)
