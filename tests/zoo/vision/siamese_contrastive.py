# keras-io: examples/vision/siamese_contrastive.py
"""Siamese network with a contrastive loss on MNIST pairs: synthetic float32 28x28 pairs
(values 0..255 and no channel axis, as the example passes them to its (28, 28, 1) inputs)
with binary float32 labels in place of the download and make_pairs; tf.keras.layers and
tf.keras.backend.epsilon() written as keras.layers and keras.backend.epsilon() (the same
objects under Keras 3); the inner contrastive_loss registered so that the saved model
reloads compiled; validation data and plots left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

batch_size = 16
margin = 1  # Margin for constrastive loss.


# Provided two tensors t1 and t2
# Euclidean distance = sqrt(sum(square(t1-t2)))
def euclidean_distance(vects):
    """Find the Euclidean distance between two vectors."""

    x, y = vects
    sum_square = tf.math.reduce_sum(tf.math.square(x - y), axis=1, keepdims=True)
    return tf.math.sqrt(tf.math.maximum(sum_square, keras.backend.epsilon()))


def loss(margin=1):
    """Provides 'constrastive_loss' an enclosing scope with variable 'margin'."""

    # Contrastive loss = mean( (1-true_value) * square(prediction) +
    #                         true_value * square( max(margin-prediction, 0) ))
    @keras.saving.register_keras_serializable(package="zoo_siamese_contrastive")
    def contrastive_loss(y_true, y_pred):
        """Calculates the constrastive loss."""

        square_pred = tf.math.square(y_pred)
        margin_square = tf.math.square(tf.math.maximum(margin - (y_pred), 0))
        return tf.math.reduce_mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss


def build_model():
    input = layers.Input((28, 28, 1))
    x = layers.BatchNormalization()(input)
    x = layers.Conv2D(4, (5, 5), activation="tanh")(x)
    x = layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = layers.Conv2D(16, (5, 5), activation="tanh")(x)
    x = layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = layers.Flatten()(x)

    x = layers.BatchNormalization()(x)
    x = layers.Dense(10, activation="tanh")(x)
    embedding_network = keras.Model(input, x)

    input_1 = layers.Input((28, 28, 1))
    input_2 = layers.Input((28, 28, 1))

    # As mentioned above, Siamese Network share weights between
    # tower networks (sister networks). To allow this, we will use
    # same embedding network for both tower networks.
    tower_1 = embedding_network(input_1)
    tower_2 = embedding_network(input_2)

    merge_layer = layers.Lambda(euclidean_distance)([tower_1, tower_2])
    normal_layer = layers.BatchNormalization()(merge_layer)
    output_layer = layers.Dense(1, activation="sigmoid")(normal_layer)
    siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)
    siamese.compile(loss=loss(margin=margin), optimizer="RMSprop", metrics=["accuracy"])
    return siamese


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x_1 = rng.integers(0, 256, size=(n, 28, 28)).astype("float32")
        x_2 = rng.integers(0, 256, size=(n, 28, 28)).astype("float32")
        labels = rng.integers(0, 2, size=n).astype("float32")
        return [x_1, x_2], labels

    return split(128), split(64)
