# keras-io: examples/generative/molecule_generation.py
"""Adapted: synthetic molecular graphs replace the ZINC csv that rdkit turns into graphs
(rdkit, not installed here, serves only that and the generation of molecules after
training, both dropped): one-hot adjacency tensors (BOND_DIM, NUM_ATOMS, NUM_ATOMS),
symmetric as the example's, one-hot feature tensors (NUM_ATOMS, ATOM_DIM) and QED values
in [0, 1] of shape (1,) (the example's are scalars, which Keras 3's binary_crossentropy
refuses against the (batch, 1) prediction, where tf.keras broadcast them), all float32,
given to fit as the example gives them, [adjacency, features, qed] and no y. NUM_ATOMS
120 -> 24, LATENT_DIM 435 -> 64, encoder dense_units [512] -> [128], decoder dense_units
[128, 256, 512] -> [32, 64, 128]; MAX_MOLSIZE (the longest SMILES string of the csv, only
stored by the model) is 120. Keras 3: `tf.keras.backend.random_normal` is
`keras.random.normal`, the decoder's symmetrization of symbolic tensors uses
`keras.ops.transpose` for `tf.transpose`, and its Dense sizes are `int(np.prod(...))` for
`tf.math.reduce_prod(...)`. RelationalGraphConvLayer, Sampling and MoleculeGenerator are
registered; MoleculeGenerator marks itself built (it is called only inside its
train_step) and gets get_config()/from_config() (its encoder and decoder; from_config also
builds the property_prediction_layer, on z_mean's shape, so that its weights and the
optimizer's reload). The latent-space plot is dropped."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_molecule_generation"

SMILE_CHARSET = ["C", "B", "F", "I", "H", "O", "N", "S", "P", "Cl", "Br"]

MAX_MOLSIZE = 120

VAE_LR = 5e-4
NUM_ATOMS = 24  # Maximum number of atoms

ATOM_DIM = len(SMILE_CHARSET)  # Number of atom types
BOND_DIM = 4 + 1  # Number of bond types
LATENT_DIM = 64  # Size of the latent space


@keras.saving.register_keras_serializable(package=PACKAGE)
class RelationalGraphConvLayer(keras.layers.Layer):
    def __init__(
        self,
        units=128,
        activation="relu",
        use_bias=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)

        self.units = units
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)

    def build(self, input_shape):
        bond_dim = input_shape[0][1]
        atom_dim = input_shape[1][2]

        self.kernel = self.add_weight(
            shape=(bond_dim, atom_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            trainable=True,
            name="W",
            dtype=tf.float32,
        )

        if self.use_bias:
            self.bias = self.add_weight(
                shape=(bond_dim, 1, self.units),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                trainable=True,
                name="b",
                dtype=tf.float32,
            )

        self.built = True

    def call(self, inputs, training=False):
        adjacency, features = inputs
        # Aggregate information from neighbors
        x = tf.matmul(adjacency, features[:, None, :, :])
        # Apply linear transformation
        x = tf.matmul(x, self.kernel)
        if self.use_bias:
            x += self.bias
        # Reduce bond types dim
        x_reduced = tf.reduce_sum(x, axis=1)
        # Apply non-linear transformation
        return self.activation(x_reduced)


def get_encoder(gconv_units, latent_dim, adjacency_shape, feature_shape, dense_units, dropout_rate):
    adjacency = keras.layers.Input(shape=adjacency_shape)
    features = keras.layers.Input(shape=feature_shape)

    # Propagate through one or more graph convolutional layers
    features_transformed = features
    for units in gconv_units:
        features_transformed = RelationalGraphConvLayer(units)([adjacency, features_transformed])
    # Reduce 2-D representation of molecule to 1-D
    x = keras.layers.GlobalAveragePooling1D()(features_transformed)

    # Propagate through one or more densely connected layers
    for units in dense_units:
        x = layers.Dense(units, activation="relu")(x)
        x = layers.Dropout(dropout_rate)(x)

    z_mean = layers.Dense(latent_dim, dtype="float32", name="z_mean")(x)
    log_var = layers.Dense(latent_dim, dtype="float32", name="log_var")(x)

    encoder = keras.Model([adjacency, features], [z_mean, log_var], name="encoder")

    return encoder


def get_decoder(dense_units, dropout_rate, latent_dim, adjacency_shape, feature_shape):
    latent_inputs = keras.Input(shape=(latent_dim,))

    x = latent_inputs
    for units in dense_units:
        x = keras.layers.Dense(units, activation="tanh")(x)
        x = keras.layers.Dropout(dropout_rate)(x)

    # Map outputs of previous layer (x) to [continuous] adjacency tensors (x_adjacency)
    x_adjacency = keras.layers.Dense(int(np.prod(adjacency_shape)))(x)
    x_adjacency = keras.layers.Reshape(adjacency_shape)(x_adjacency)
    # Symmetrify tensors in the last two dimensions
    x_adjacency = (x_adjacency + keras.ops.transpose(x_adjacency, (0, 1, 3, 2))) / 2
    x_adjacency = keras.layers.Softmax(axis=1)(x_adjacency)

    # Map outputs of previous layer (x) to [continuous] feature tensors (x_features)
    x_features = keras.layers.Dense(int(np.prod(feature_shape)))(x)
    x_features = keras.layers.Reshape(feature_shape)(x_features)
    x_features = keras.layers.Softmax(axis=2)(x_features)

    decoder = keras.Model(latent_inputs, outputs=[x_adjacency, x_features], name="decoder")

    return decoder


@keras.saving.register_keras_serializable(package=PACKAGE)
class Sampling(layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_log_var)[0]
        dim = tf.shape(z_log_var)[1]
        epsilon = keras.random.normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


@keras.saving.register_keras_serializable(package=PACKAGE)
class MoleculeGenerator(keras.Model):
    def __init__(self, encoder, decoder, max_len, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.property_prediction_layer = layers.Dense(1)
        self.max_len = max_len

        self.train_total_loss_tracker = keras.metrics.Mean(name="train_total_loss")
        self.val_total_loss_tracker = keras.metrics.Mean(name="val_total_loss")
        # Keras 3: the model is called only inside its train_step, so nothing builds it.
        self.built = True

    def train_step(self, data):
        adjacency_tensor, feature_tensor, qed_tensor = data[0]
        graph_real = [adjacency_tensor, feature_tensor]
        self.batch_size = tf.shape(qed_tensor)[0]
        with tf.GradientTape() as tape:
            z_mean, z_log_var, qed_pred, gen_adjacency, gen_features = self(
                graph_real, training=True
            )
            graph_generated = [gen_adjacency, gen_features]
            total_loss = self._compute_loss(
                z_log_var, z_mean, qed_tensor, qed_pred, graph_real, graph_generated
            )

        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))  # noqa: B905 (as in the example)

        self.train_total_loss_tracker.update_state(total_loss)
        return {"loss": self.train_total_loss_tracker.result()}

    def _compute_loss(self, z_log_var, z_mean, qed_true, qed_pred, graph_real, graph_generated):
        adjacency_real, features_real = graph_real
        adjacency_gen, features_gen = graph_generated

        adjacency_loss = tf.reduce_mean(
            tf.reduce_sum(
                keras.losses.categorical_crossentropy(adjacency_real, adjacency_gen),
                axis=(1, 2),
            )
        )
        features_loss = tf.reduce_mean(
            tf.reduce_sum(
                keras.losses.categorical_crossentropy(features_real, features_gen),
                axis=(1),
            )
        )
        kl_loss = -0.5 * tf.reduce_sum(1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var), 1)
        kl_loss = tf.reduce_mean(kl_loss)

        property_loss = tf.reduce_mean(keras.losses.binary_crossentropy(qed_true, qed_pred))

        graph_loss = self._gradient_penalty(graph_real, graph_generated)

        return kl_loss + property_loss + graph_loss + adjacency_loss + features_loss

    def _gradient_penalty(self, graph_real, graph_generated):
        # Unpack graphs
        adjacency_real, features_real = graph_real
        adjacency_generated, features_generated = graph_generated

        # Generate interpolated graphs (adjacency_interp and features_interp)
        alpha = tf.random.uniform([self.batch_size])
        alpha = tf.reshape(alpha, (self.batch_size, 1, 1, 1))
        adjacency_interp = (adjacency_real * alpha) + (1 - alpha) * adjacency_generated
        alpha = tf.reshape(alpha, (self.batch_size, 1, 1))
        features_interp = (features_real * alpha) + (1 - alpha) * features_generated

        # Compute the logits of interpolated graphs
        with tf.GradientTape() as tape:
            tape.watch(adjacency_interp)
            tape.watch(features_interp)
            _, _, logits, _, _ = self([adjacency_interp, features_interp], training=True)

        # Compute the gradients with respect to the interpolated graphs
        grads = tape.gradient(logits, [adjacency_interp, features_interp])
        # Compute the gradient penalty
        grads_adjacency_penalty = (1 - tf.norm(grads[0], axis=1)) ** 2
        grads_features_penalty = (1 - tf.norm(grads[1], axis=2)) ** 2
        return tf.reduce_mean(
            tf.reduce_mean(grads_adjacency_penalty, axis=(-2, -1))
            + tf.reduce_mean(grads_features_penalty, axis=(-1))
        )

    def call(self, inputs):
        z_mean, log_var = self.encoder(inputs)
        z = Sampling()([z_mean, log_var])

        gen_adjacency, gen_features = self.decoder(z)

        property_pred = self.property_prediction_layer(z_mean)

        return z_mean, log_var, property_pred, gen_adjacency, gen_features

    def get_config(self):
        config = super().get_config()
        config["encoder"] = keras.saving.serialize_keras_object(self.encoder)
        config["decoder"] = keras.saving.serialize_keras_object(self.decoder)
        config["max_len"] = self.max_len
        return config

    @classmethod
    def from_config(cls, config):
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["decoder"] = keras.saving.deserialize_keras_object(config["decoder"])
        model = cls(**config)
        # built by the first call in fit; built here so that its weights reload
        model.property_prediction_layer.build(model.encoder.output[0].shape)
        return model


def build_model():
    vae_optimizer = keras.optimizers.Adam(learning_rate=VAE_LR)

    encoder = get_encoder(
        gconv_units=[9],
        adjacency_shape=(BOND_DIM, NUM_ATOMS, NUM_ATOMS),
        feature_shape=(NUM_ATOMS, ATOM_DIM),
        latent_dim=LATENT_DIM,
        dense_units=[128],
        dropout_rate=0.0,
    )
    decoder = get_decoder(
        dense_units=[32, 64, 128],
        dropout_rate=0.2,
        latent_dim=LATENT_DIM,
        adjacency_shape=(BOND_DIM, NUM_ATOMS, NUM_ATOMS),
        feature_shape=(NUM_ATOMS, ATOM_DIM),
    )

    model = MoleculeGenerator(encoder, decoder, MAX_MOLSIZE)

    model.compile(vae_optimizer)
    return model


def load_data():
    rng = np.random.default_rng(0)

    def graphs(n):
        # bond type per atom pair, mostly the last channel ("non-bond"), symmetric
        bonds = rng.choice(BOND_DIM, size=(n, NUM_ATOMS, NUM_ATOMS), p=[0.1, 0.04, 0.02, 0.04, 0.8])
        bonds = np.triu(bonds) + np.transpose(np.triu(bonds, 1), (0, 2, 1))
        adjacency = np.eye(BOND_DIM, dtype="float32")[bonds].transpose(0, 3, 1, 2)
        atoms = rng.integers(0, ATOM_DIM, size=(n, NUM_ATOMS))
        features = np.eye(ATOM_DIM, dtype="float32")[atoms]
        qed = rng.random((n, 1), dtype=np.float32)
        return [adjacency, features, qed]

    return (graphs(128), None), (graphs(64), None)
