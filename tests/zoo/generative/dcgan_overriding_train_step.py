# keras-io: examples/generative/dcgan_overriding_train_step.py
"""Adapted: synthetic 28x28x1 images in [0, 1] replace the MNIST digits (fit gets x and no
y, as the example's dataset of images gives it); filters cut by 4 (discriminator 64/128 ->
16/32, generator 128 -> 32). Keras 3: LeakyReLU's `alpha` is `negative_slope`. GAN is
registered, marks itself built (it is never called, so Keras would not) and gets
get_config()/from_config() (its two networks) and get_compile_config()/compile_from_config()
(which builds the two optimizers), so that it reloads compiled. The summaries and the
GANMonitor callback (it writes images) are dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_dcgan_overriding_train_step"

latent_dim = 128


def get_discriminator():
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )


def get_generator():
    return keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            # We want to generate 32 coefficients to reshape into a 7x7x32 map
            layers.Dense(7 * 7 * 32),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((7, 7, 32)),
            layers.Conv2DTranspose(32, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(32, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )


@keras.saving.register_keras_serializable(package=PACKAGE)
class GAN(keras.Model):
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

    def train_step(self, real_images):
        # Sample random points in the latent space
        batch_size = tf.shape(real_images)[0]
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))

        # Decode them to fake images
        generated_images = self.generator(random_latent_vectors)

        # Combine them with real images
        combined_images = tf.concat([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        # Add random noise to the labels - important trick!
        labels += 0.05 * tf.random.uniform(tf.shape(labels))

        # Train the discriminator
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))  # noqa: B905 (as in the example)

        # Sample random points in the latent space
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))

        # Assemble labels that say "all real images"
        misleading_labels = tf.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
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
        config["discriminator"] = keras.saving.deserialize_keras_object(config["discriminator"])
        config["generator"] = keras.saving.deserialize_keras_object(config["generator"])
        return cls(**config)

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
    gan = GAN(discriminator=get_discriminator(), generator=get_generator(), latent_dim=latent_dim)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
    )
    return gan


def load_data():
    rng = np.random.default_rng(0)

    def digits(n):
        return rng.random((n, 28, 28, 1), dtype=np.float32)

    return (digits(128), None), (digits(64), None)
