# keras-io: examples/structured_data/movielens_recommendations_transformers.py
"""Behavior Sequence Transformer on MovieLens 1M, following the example's Keras 3 version
(keras.ops in place of tf ops on symbolic tensors): synthetic rows of (user_id, 3
sequence movie ids, target movie id as strings over 100 movies (cut from 3883), sequence
ratings 1-5, sex, age_group, occupation) with the target rating as label, as unbatched
`tf.data.Dataset`s of (dict, rating) since Keras does not take string NumPy arrays, in
place of the download, pandas processing and CSV files; synthetic genre vectors; user
vocabulary cut to 50 ids; hidden_units cut from [256, 128] to [32, 16]."""

import math

import keras
import numpy as np
import tensorflow as tf
from keras import layers
from keras.layers import StringLookup

genres = [
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
]

sequence_length = 4

num_movies = 100
num_users = 50

CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "user_id": [f"user_{i}" for i in range(1, num_users + 1)],
    "movie_id": [f"movie_{i}" for i in range(1, num_movies + 1)],
    "sex": ["F", "M"],
    "age_group": [f"group_{g}" for g in [1, 18, 25, 35, 45, 50, 56]],
    "occupation": [f"occupation_{o}" for o in range(21)],
}

USER_FEATURES = ["sex", "age_group", "occupation"]

MOVIE_FEATURES = ["genres"]


def genre_vectors_of_movies():
    rng = np.random.default_rng(1)
    return (rng.uniform(size=(num_movies, len(genres))) < 0.15).astype(np.int64)


def create_model_inputs():
    return {
        "user_id": layers.Input(name="user_id", shape=(1,), dtype="string"),
        "sequence_movie_ids": layers.Input(
            name="sequence_movie_ids", shape=(sequence_length - 1,), dtype="string"
        ),
        "target_movie_id": layers.Input(name="target_movie_id", shape=(1,), dtype="string"),
        "sequence_ratings": layers.Input(
            name="sequence_ratings", shape=(sequence_length - 1,), dtype="float32"
        ),
        "sex": layers.Input(name="sex", shape=(1,), dtype="string"),
        "age_group": layers.Input(name="age_group", shape=(1,), dtype="string"),
        "occupation": layers.Input(name="occupation", shape=(1,), dtype="string"),
    }


def encode_input_features(
    inputs,
    include_user_id=True,
    include_user_features=True,
    include_movie_features=True,
):
    encoded_transformer_features = []
    encoded_other_features = []

    other_feature_names = []
    if include_user_id:
        other_feature_names.append("user_id")
    if include_user_features:
        other_feature_names.extend(USER_FEATURES)

    ## Encode user features
    for feature_name in other_feature_names:
        # Convert the string input values into integer indices.
        vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
        idx = StringLookup(vocabulary=vocabulary, mask_token=None, num_oov_indices=0)(
            inputs[feature_name]
        )
        # Compute embedding dimensions
        embedding_dims = int(math.sqrt(len(vocabulary)))
        # Create an embedding layer with the specified dimensions.
        embedding_encoder = layers.Embedding(
            input_dim=len(vocabulary),
            output_dim=embedding_dims,
            name=f"{feature_name}_embedding",
        )
        # Convert the index values to embedding representations.
        encoded_other_features.append(embedding_encoder(idx))

    ## Create a single embedding vector for the user features
    if len(encoded_other_features) > 1:
        encoded_other_features = layers.concatenate(encoded_other_features)
    elif len(encoded_other_features) == 1:
        encoded_other_features = encoded_other_features[0]
    else:
        encoded_other_features = None

    ## Create a movie embedding encoder
    movie_vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY["movie_id"]
    movie_embedding_dims = int(math.sqrt(len(movie_vocabulary)))
    # Create a lookup to convert string values to integer indices.
    movie_index_lookup = StringLookup(
        vocabulary=movie_vocabulary,
        mask_token=None,
        num_oov_indices=0,
        name="movie_index_lookup",
    )
    # Create an embedding layer with the specified dimensions.
    movie_embedding_encoder = layers.Embedding(
        input_dim=len(movie_vocabulary),
        output_dim=movie_embedding_dims,
        name="movie_embedding",
    )
    # Create a vector lookup for movie genres.
    genre_vectors = genre_vectors_of_movies()
    movie_genres_lookup = layers.Embedding(
        input_dim=genre_vectors.shape[0],
        output_dim=genre_vectors.shape[1],
        embeddings_initializer=keras.initializers.Constant(genre_vectors),
        trainable=False,
        name="genres_vector",
    )
    # Create a processing layer for genres.
    movie_embedding_processor = layers.Dense(
        units=movie_embedding_dims,
        activation="relu",
        name="process_movie_embedding_with_genres",
    )

    ## Define a function to encode a given movie id.
    def encode_movie(movie_id):
        # Convert the string input values into integer indices.
        movie_idx = movie_index_lookup(movie_id)
        movie_embedding = movie_embedding_encoder(movie_idx)
        encoded_movie = movie_embedding
        if include_movie_features:
            movie_genres_vector = movie_genres_lookup(movie_idx)
            encoded_movie = movie_embedding_processor(
                layers.concatenate([movie_embedding, movie_genres_vector])
            )
        return encoded_movie

    ## Encoding target_movie_id
    target_movie_id = inputs["target_movie_id"]
    encoded_target_movie = encode_movie(target_movie_id)

    ## Encoding sequence movie_ids.
    sequence_movies_ids = inputs["sequence_movie_ids"]
    encoded_sequence_movies = encode_movie(sequence_movies_ids)
    # Create positional embedding.
    position_embedding_encoder = layers.Embedding(
        input_dim=sequence_length,
        output_dim=movie_embedding_dims,
        name="position_embedding",
    )
    positions = keras.ops.arange(start=0, stop=sequence_length - 1, step=1)
    encodded_positions = position_embedding_encoder(positions)
    # Retrieve sequence ratings to incorporate them into the encoding of the movie.
    sequence_ratings = keras.ops.expand_dims(inputs["sequence_ratings"], -1)
    # Add the positional encoding to the movie encodings and multiply them by rating.
    encoded_sequence_movies_with_poistion_and_rating = layers.Multiply()(
        [(encoded_sequence_movies + encodded_positions), sequence_ratings]
    )

    # Construct the transformer inputs.
    for encoded_movie in keras.ops.unstack(
        encoded_sequence_movies_with_poistion_and_rating, axis=1
    ):
        encoded_transformer_features.append(keras.ops.expand_dims(encoded_movie, 1))
    encoded_transformer_features.append(encoded_target_movie)

    encoded_transformer_features = layers.concatenate(encoded_transformer_features, axis=1)

    return encoded_transformer_features, encoded_other_features


include_user_id = False
include_user_features = False
include_movie_features = False

hidden_units = [32, 16]
dropout_rate = 0.1
num_heads = 3


def create_model():
    inputs = create_model_inputs()
    transformer_features, other_features = encode_input_features(
        inputs, include_user_id, include_user_features, include_movie_features
    )

    # Create a multi-headed attention layer.
    attention_output = layers.MultiHeadAttention(
        num_heads=num_heads, key_dim=transformer_features.shape[2], dropout=dropout_rate
    )(transformer_features, transformer_features)

    # Transformer block.
    attention_output = layers.Dropout(dropout_rate)(attention_output)
    x1 = layers.Add()([transformer_features, attention_output])
    x1 = layers.LayerNormalization()(x1)
    x2 = layers.LeakyReLU()(x1)
    x2 = layers.Dense(units=x2.shape[-1])(x2)
    x2 = layers.Dropout(dropout_rate)(x2)
    transformer_features = layers.Add()([x1, x2])
    transformer_features = layers.LayerNormalization()(transformer_features)
    features = layers.Flatten()(transformer_features)

    # Included the other features.
    if other_features is not None:
        features = layers.concatenate(
            [features, layers.Reshape([other_features.shape[-1]])(other_features)]
        )

    # Fully-connected layers.
    for num_units in hidden_units:
        features = layers.Dense(num_units)(features)
        features = layers.BatchNormalization()(features)
        features = layers.LeakyReLU()(features)
        features = layers.Dropout(dropout_rate)(features)

    outputs = layers.Dense(units=1)(features)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = create_model()
    # Compile the model.
    model.compile(
        optimizer=keras.optimizers.Adagrad(learning_rate=0.01),
        loss=keras.losses.MeanSquaredError(),
        metrics=[keras.metrics.MeanAbsoluteError()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def pick(feature_name, shape):
        vocabulary = np.array(CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name])
        return rng.choice(vocabulary, size=shape)

    def split(n):
        movie_ids = pick("movie_id", (n, sequence_length))
        ratings = rng.integers(1, 6, size=(n, sequence_length)).astype(np.float32)
        features = {
            "user_id": pick("user_id", (n, 1)),
            # The last movie id in the sequence is the target movie.
            "sequence_movie_ids": movie_ids[:, :-1],
            "target_movie_id": movie_ids[:, -1:],
            "sequence_ratings": ratings[:, :-1],
            "sex": pick("sex", (n, 1)),
            "age_group": pick("age_group", (n, 1)),
            "occupation": pick("occupation", (n, 1)),
        }
        # The last rating in the sequence is the target for the model to predict.
        target = ratings[:, -1]
        return tf.data.Dataset.from_tensor_slices((features, target))

    return split(128), split(64)
