# keras-io: examples/structured_data/feature_space_advanced.py
"""FeatureSpace advanced use cases (the final FeatureSpace and model) on bank marketing
data: synthetic clients with the bank-additional.csv columns, value sets and ranges
(`duration` dropped, `previously_contacted` derived from `pdays` as the example does) and
labels 0/1 in place of the UCI download; the FeatureSpace is adapted on the synthetic
training rows, and `load_data()` returns the rows already preprocessed by it (one float32
vector per client), as the example's model is fit on the `feature_space`-mapped dataset;
the per-feature demonstrations and the FeatureSpace save are left out."""

import keras
import numpy as np
import tensorflow as tf
from keras.utils import FeatureSpace


def make_feature_space():
    return FeatureSpace(
        features={
            # Categorical features encoded as integers
            "previously_contacted": FeatureSpace.integer_categorical(num_oov_indices=0),
            # Categorical features encoded as string
            "marital": FeatureSpace.string_categorical(num_oov_indices=0),
            "education": FeatureSpace.string_categorical(num_oov_indices=0),
            "default": FeatureSpace.string_categorical(num_oov_indices=0),
            "housing": FeatureSpace.string_categorical(num_oov_indices=0),
            "loan": FeatureSpace.string_categorical(num_oov_indices=0),
            "contact": FeatureSpace.string_categorical(num_oov_indices=0),
            "month": FeatureSpace.string_categorical(num_oov_indices=0),
            "day_of_week": FeatureSpace.string_categorical(num_oov_indices=0),
            "poutcome": FeatureSpace.string_categorical(num_oov_indices=0),
            # Categorical features to hash and bin
            "job": FeatureSpace.string_hashed(num_bins=3),
            # Numerical features to hash and bin
            "pdays": FeatureSpace.integer_hashed(num_bins=4),
            # Numerical features to normalize and bin
            "age": FeatureSpace.float_discretized(num_bins=4),
            # Numerical features to normalize
            "campaign": FeatureSpace.float_normalized(),
            "previous": FeatureSpace.float_normalized(),
            "emp.var.rate": FeatureSpace.float_normalized(),
            "cons.price.idx": FeatureSpace.float_normalized(),
            "cons.conf.idx": FeatureSpace.float_normalized(),
            "euribor3m": FeatureSpace.float_normalized(),
            "nr.employed": FeatureSpace.float_normalized(),
        },
        # Specify feature cross with a custom crossing dim.
        crosses=[
            FeatureSpace.cross(feature_names=("age", "job"), crossing_dim=8),
            FeatureSpace.cross(feature_names=("housing", "loan"), crossing_dim=6),
            FeatureSpace.cross(feature_names=("poutcome", "previously_contacted"), crossing_dim=2),
        ],
        output_mode="concat",
    )


def bank_data(rng, n):
    """Synthetic rows with the bank-additional.csv columns, value sets and ranges."""

    def pick(*values):
        return rng.choice(np.array(values), size=n)

    pdays = np.where(rng.uniform(size=n) < 0.9, 999, rng.integers(0, 22, size=n))
    columns = {
        "age": rng.integers(18, 89, size=n),
        "job": pick(
            "admin.",
            "blue-collar",
            "entrepreneur",
            "housemaid",
            "management",
            "retired",
            "self-employed",
            "services",
            "student",
            "technician",
            "unemployed",
            "unknown",
        ),
        "marital": pick("divorced", "married", "single", "unknown"),
        "education": pick(
            "basic.4y",
            "basic.6y",
            "basic.9y",
            "high.school",
            "illiterate",
            "professional.course",
            "university.degree",
            "unknown",
        ),
        "default": pick("no", "unknown", "yes"),
        "housing": pick("no", "unknown", "yes"),
        "loan": pick("no", "unknown", "yes"),
        "contact": pick("cellular", "telephone"),
        "month": pick("mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        "day_of_week": pick("mon", "tue", "wed", "thu", "fri"),
        "campaign": rng.integers(1, 36, size=n),
        "pdays": pdays,
        "previous": rng.integers(0, 7, size=n),
        "poutcome": pick("failure", "nonexistent", "success"),
        "emp.var.rate": rng.choice(np.array([-3.4, -1.8, -0.1, 1.1, 1.4]), size=n),
        "cons.price.idx": rng.uniform(92.2, 94.8, size=n),
        "cons.conf.idx": rng.uniform(-50.8, -26.9, size=n),
        "euribor3m": rng.uniform(0.6, 5.0, size=n),
        "nr.employed": rng.choice(np.array([4963.6, 5099.1, 5191.0, 5228.1]), size=n),
        # Creating the new feature `previously_contacted`
        "previously_contacted": (pdays != 999).astype(np.int64),
    }
    # label_lookup maps "no" / "yes" to 0 / 1.
    target = (rng.uniform(size=n) < 0.11).astype(np.int64)
    return columns, target


def raw_splits():
    rng = np.random.default_rng(0)
    return bank_data(rng, 128), bank_data(rng, 64)


def adapted_feature_space():
    (train_columns, _), _ = raw_splits()
    train_ds_with_no_labels = tf.data.Dataset.from_tensor_slices(train_columns).batch(32)
    feature_space = make_feature_space()
    feature_space.adapt(train_ds_with_no_labels)
    return feature_space


def build_model():
    feature_space = adapted_feature_space()
    encoded_features = feature_space.get_encoded_features()

    x = keras.layers.Dense(64, activation="relu")(encoded_features)
    x = keras.layers.Dropout(0.5)(x)
    output = keras.layers.Dense(1, activation="sigmoid")(x)

    model = keras.Model(inputs=encoded_features, outputs=output)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    feature_space = adapted_feature_space()
    (train_columns, train_target), (test_columns, test_target) = raw_splits()
    x_train = keras.ops.convert_to_numpy(feature_space(train_columns))
    x_test = keras.ops.convert_to_numpy(feature_space(test_columns))
    return (x_train, train_target), (x_test, test_target)
