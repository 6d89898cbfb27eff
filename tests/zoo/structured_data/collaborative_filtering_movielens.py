# keras-io: examples/structured_data/collaborative_filtering_movielens.py
"""Collaborative filtering on MovieLens: synthetic (user, movie) index pairs over the
ml-latest-small sizes (610 users, 9724 movies) with ratings 0.5-5 scaled to [0, 1], in
place of the download; EMBEDDING_SIZE cut from 50 to 16; `learning_rate=` in place of the
`lr=` argument Keras 3 no longer takes; RecommenderNet has `get_config()` for saving."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_users = 610
num_movies = 9724
min_rating = 0.5
max_rating = 5.0
EMBEDDING_SIZE = 16


@keras.saving.register_keras_serializable(package="zoo_collaborative_filtering_movielens")
class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, min_rating, max_rating, **kwargs):
        super().__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.min_rating = min_rating
        self.max_rating = max_rating
        self.user_embedding = layers.Embedding(
            num_users,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(
            num_movies,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.movie_bias = layers.Embedding(num_movies, 1)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0])
        user_bias = self.user_bias(inputs[:, 0])
        movie_vector = self.movie_embedding(inputs[:, 1])
        movie_bias = self.movie_bias(inputs[:, 1])
        dot_user_movie = layers.Dot(axes=1)([user_vector, movie_vector])
        # Add all the components (including bias)
        x = dot_user_movie + user_bias + movie_bias
        # The sigmoid activation forces the rating to between 0 and 1
        x = tf.nn.sigmoid(x)
        return x

    def get_config(self):
        return {
            "num_users": self.num_users,
            "num_movies": self.num_movies,
            "embedding_size": self.embedding_size,
            "min_rating": self.min_rating,
            "max_rating": self.max_rating,
        }


def build_model():
    inputs = layers.Input(shape=(2,))
    model = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE, min_rating, max_rating)
    outputs = model(inputs)  # noqa: F841
    opt = keras.optimizers.Adam(learning_rate=0.001)
    model.compile(loss=keras.losses.BinaryCrossentropy(), optimizer=opt)
    return model


def load_data():
    rng = np.random.default_rng(0)
    n = 192
    user = rng.integers(0, num_users, size=(n,))
    movie = rng.integers(0, num_movies, size=(n,))
    x = np.stack([user, movie], axis=1)
    rating = rng.integers(1, 11, size=(n,)).astype(np.float32) / 2.0
    # Normalize the targets between 0 and 1. Makes it easy to train.
    y = (rating - min_rating) / (max_rating - min_rating)
    return (x[:128], y[:128]), (x[128:], y[128:])
