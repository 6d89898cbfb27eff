# keras-io: examples/structured_data/structured_data_classification_with_feature_space.py
"""Structured data classification with FeatureSpace on the heart disease data: synthetic
patients with the heart.csv columns and value ranges (labels 0/1) in place of the CSV
download; the FeatureSpace is adapted on the synthetic training rows, and `load_data()`
returns the rows already preprocessed by it (one float32 vector per patient), as the
example's training model is fit on the `feature_space`-mapped dataset."""

import keras
import numpy as np
import tensorflow as tf
from keras.utils import FeatureSpace


def make_feature_space():
    return FeatureSpace(
        features={
            # Categorical features encoded as integers
            "sex": FeatureSpace.integer_categorical(num_oov_indices=0),
            "cp": FeatureSpace.integer_categorical(num_oov_indices=0),
            "fbs": FeatureSpace.integer_categorical(num_oov_indices=0),
            "restecg": FeatureSpace.integer_categorical(num_oov_indices=0),
            "exang": FeatureSpace.integer_categorical(num_oov_indices=0),
            "ca": FeatureSpace.integer_categorical(num_oov_indices=0),
            # Categorical feature encoded as string
            "thal": FeatureSpace.string_categorical(num_oov_indices=0),
            # Numerical features to discretize
            "age": FeatureSpace.float_discretized(num_bins=30),
            # Numerical features to normalize
            "trestbps": FeatureSpace.float_normalized(),
            "chol": FeatureSpace.float_normalized(),
            "thalach": FeatureSpace.float_normalized(),
            "oldpeak": FeatureSpace.float_normalized(),
            "slope": FeatureSpace.float_normalized(),
        },
        # Specify feature cross with a custom crossing dim.
        crosses=[
            FeatureSpace.cross(feature_names=("sex", "age"), crossing_dim=64),
            FeatureSpace.cross(
                feature_names=("thal", "ca"),
                crossing_dim=16,
            ),
        ],
        output_mode="concat",
    )


def heart_data(rng, n):
    """Synthetic rows with the heart.csv columns and value ranges."""
    columns = {
        "age": rng.integers(29, 78, size=n),
        "sex": rng.integers(0, 2, size=n),
        "cp": rng.integers(0, 5, size=n),
        "trestbps": rng.integers(94, 201, size=n),
        "chol": rng.integers(126, 565, size=n),
        "fbs": rng.integers(0, 2, size=n),
        "restecg": rng.integers(0, 3, size=n),
        "thalach": rng.integers(71, 203, size=n),
        "exang": rng.integers(0, 2, size=n),
        "oldpeak": rng.integers(0, 63, size=n) / 10.0,
        "slope": rng.integers(1, 4, size=n),
        "ca": rng.integers(0, 4, size=n),
        "thal": rng.choice(np.array(["fixed", "normal", "reversible"]), size=n),
    }
    target = rng.integers(0, 2, size=n)
    return columns, target


def raw_splits():
    rng = np.random.default_rng(0)
    return heart_data(rng, 128), heart_data(rng, 64)


def adapted_feature_space():
    (train_columns, _), _ = raw_splits()
    train_ds = tf.data.Dataset.from_tensor_slices(train_columns).batch(32)
    feature_space = make_feature_space()
    feature_space.adapt(train_ds)
    return feature_space


def build_model():
    feature_space = adapted_feature_space()
    encoded_features = feature_space.get_encoded_features()

    x = keras.layers.Dense(32, activation="relu")(encoded_features)
    x = keras.layers.Dropout(0.5)(x)
    predictions = keras.layers.Dense(1, activation="sigmoid")(x)

    training_model = keras.Model(inputs=encoded_features, outputs=predictions)
    training_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return training_model


def load_data():
    feature_space = adapted_feature_space()
    (train_columns, train_target), (test_columns, test_target) = raw_splits()
    x_train = keras.ops.convert_to_numpy(feature_space(train_columns))
    x_test = keras.ops.convert_to_numpy(feature_space(test_columns))
    return (x_train, train_target), (x_test, test_target)
