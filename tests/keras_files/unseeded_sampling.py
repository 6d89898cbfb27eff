"""A variational autoencoder as keras.io's writes it: a Sampling layer that draws with
`keras.random.normal(shape)` and no seed, and a train_step of its own (OWN_STEP), or the same
encoder and decoder as one functional model whose KL term is an add_loss."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

OWN_STEP = True
LATENT = 2


class Sampling(layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        epsilon = keras.random.normal(shape=tf.shape(z_mean))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class KL(layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        kl = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
        self.add_loss(tf.reduce_mean(tf.reduce_sum(kl, axis=1)))
        return z_mean


def encoder():
    images = keras.Input((8, 8, 1))
    x = layers.Dense(16, activation="relu")(layers.Flatten()(images))
    z_mean, z_log_var = layers.Dense(LATENT)(x), layers.Dense(LATENT)(x)
    return keras.Model(images, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])


def decoder():
    z = keras.Input((LATENT,))
    x = layers.Dense(64, activation="sigmoid")(layers.Dense(16, activation="relu")(z))
    return keras.Model(z, layers.Reshape((8, 8, 1))(x))


class VAE(keras.Model):
    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.decoder = encoder, decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")

    @property
    def metrics(self):
        return [self.total_loss_tracker]

    def call(self, x):
        return self.decoder(self.encoder(x)[2])

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            loss = tf.reduce_mean(
                tf.reduce_sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
            )
            kl = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
            loss += tf.reduce_mean(tf.reduce_sum(kl, axis=1))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
        self.total_loss_tracker.update_state(loss)
        return {"loss": self.total_loss_tracker.result()}


def build_model():
    if OWN_STEP:
        model = VAE(encoder(), decoder())
        model.compile(optimizer=keras.optimizers.Adam())
        return model
    parts, rebuild = encoder(), decoder()
    z_mean, z_log_var, z = parts.outputs
    KL()([z_mean, z_log_var])
    model = keras.Model(parts.inputs, rebuild(z))
    model.compile(optimizer=keras.optimizers.Adam(), loss="binary_crossentropy")
    return model


def load_data():
    images = np.random.default_rng(0).random((192, 8, 8, 1), dtype=np.float32)
    if OWN_STEP:
        return (images[:128], None), (images[128:], None)
    return (images[:128], images[:128]), (images[128:], images[128:])
