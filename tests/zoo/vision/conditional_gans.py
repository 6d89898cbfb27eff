# keras-io: examples/vision/conditional_gans.py
"""Adapted: synthetic 28x28x1 float images in [0, 1] with one-hot labels over 10 classes
replace MNIST (fit on (images, one-hot labels), as the example's dataset gives them);
latent_dim, which the stored example uses without defining it (its generator's comment
says 128), is 16; discriminator filters 64/128 -> 8/16, generator Conv2DTranspose filters
128 -> 16. Keras 3: `InputLayer((shape))` is `shape=`, LeakyReLU's `alpha` is
`negative_slope`. ConditionalGAN is registered, marks itself built (it is never called, so
Keras would not) and gets get_config()/from_config() and
get_compile_config()/compile_from_config(), so that the model reloads compiled. The
interpolation and GIF after training are dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_conditional_gans"

num_channels = 1
num_classes = 10
image_size = 28
latent_dim = 16

generator_in_channels = latent_dim + num_classes
discriminator_in_channels = num_channels + num_classes


def make_discriminator():
    return keras.Sequential(
        [
            keras.layers.InputLayer(shape=(28, 28, discriminator_in_channels)),
            layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )


def make_generator():
    return keras.Sequential(
        [
            keras.layers.InputLayer(shape=(generator_in_channels,)),
            # We want to generate 128 + num_classes coefficients to reshape into a
            # 7x7x(128 + num_classes) map.
            layers.Dense(7 * 7 * generator_in_channels),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((7, 7, generator_in_channels)),
            layers.Conv2DTranspose(16, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(16, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )


@keras.saving.register_keras_serializable(package=PACKAGE)
class ConditionalGAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        # Keras 3: the model has no call of its own, so nothing builds it.
        self.built = True

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, data):
        # Unpack the data.
        real_images, one_hot_labels = data

        # Add dummy dimensions to the labels so that they can be concatenated with
        # the images. This is for the discriminator.
        image_one_hot_labels = one_hot_labels[:, :, None, None]
        image_one_hot_labels = tf.repeat(image_one_hot_labels, repeats=[image_size * image_size])
        image_one_hot_labels = tf.reshape(
            image_one_hot_labels, (-1, image_size, image_size, num_classes)
        )

        # Sample random points in the latent space and concatenate the labels.
        # This is for the generator.
        batch_size = tf.shape(real_images)[0]
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
        random_vector_labels = tf.concat([random_latent_vectors, one_hot_labels], axis=1)

        # Decode the noise (guided by labels) to fake images.
        generated_images = self.generator(random_vector_labels)

        # Combine them with real images. Note that we are concatenating the labels
        # with these images here.
        fake_image_and_labels = tf.concat([generated_images, image_one_hot_labels], -1)
        real_image_and_labels = tf.concat([real_images, image_one_hot_labels], -1)
        combined_images = tf.concat([fake_image_and_labels, real_image_and_labels], axis=0)

        # Assemble labels discriminating real from fake images.
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)

        # Train the discriminator.
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))  # noqa: B905 (as in the example)

        # Sample random points in the latent space.
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
        random_vector_labels = tf.concat([random_latent_vectors, one_hot_labels], axis=1)

        # Assemble labels that say "all real images".
        misleading_labels = tf.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            fake_images = self.generator(random_vector_labels)
            fake_image_and_labels = tf.concat([fake_images, image_one_hot_labels], -1)
            predictions = self.discriminator(fake_image_and_labels)
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))  # noqa: B905 (as in the example)
        return {"d_loss": d_loss, "g_loss": g_loss}

    def get_config(self):
        return {
            "discriminator": keras.saving.serialize_keras_object(self.discriminator),
            "generator": keras.saving.serialize_keras_object(self.generator),
            "latent_dim": self.latent_dim,
        }

    @classmethod
    def from_config(cls, config):
        return cls(
            discriminator=keras.saving.deserialize_keras_object(config["discriminator"]),
            generator=keras.saving.deserialize_keras_object(config["generator"]),
            latent_dim=config["latent_dim"],
        )

    def get_compile_config(self):
        return {
            "d_optimizer": keras.saving.serialize_keras_object(self.d_optimizer),
            "g_optimizer": keras.saving.serialize_keras_object(self.g_optimizer),
            "loss_fn": keras.saving.serialize_keras_object(self.loss_fn),
        }

    def compile_from_config(self, config):
        self.compile(
            d_optimizer=keras.saving.deserialize_keras_object(config["d_optimizer"]),
            g_optimizer=keras.saving.deserialize_keras_object(config["g_optimizer"]),
            loss_fn=keras.saving.deserialize_keras_object(config["loss_fn"]),
        )
        self.d_optimizer.build(self.discriminator.trainable_weights)
        self.g_optimizer.build(self.generator.trainable_weights)


def build_model():
    cond_gan = ConditionalGAN(
        discriminator=make_discriminator(), generator=make_generator(), latent_dim=latent_dim
    )
    cond_gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
    )
    return cond_gan


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        digits = rng.integers(0, 256, size=(n, 28, 28)).astype("float32") / 255.0
        digits = np.reshape(digits, (-1, 28, 28, 1))
        labels = keras.utils.to_categorical(rng.integers(0, 10, size=n), 10)
        return digits, labels

    return split(128), split(64)
