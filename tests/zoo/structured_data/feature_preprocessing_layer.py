# keras-io: examples/structured_data/feature_preprocessing_layer.py
"""Feature preprocessing with a custom FeaturePreprocessor on the adult income data:
synthetic rows with the adult.data columns, value sets and ranges (labels 0./1.) in place
of the UCI download; the FeaturePreprocessor is adapted on the synthetic training rows,
and `load_data()` returns the rows already preprocessed by the example's
`preprocessing_model` (one float32 vector per row), as the example fits its
`training_model` on them; `keras` in place of `tf.keras`, `InputLayer(shape=...)` in
place of `input_shape=`, and `IntegerLookup(output_mode="multi_hot")` in place of
"binary" (renamed in Keras 3); the inference model and its save are left out. The rows are
preprocessed once and kept: two adapts of the FeaturePreprocessor on the same rows differ
(by 0.09), so each call would give other data."""

import functools

import keras
import numpy as np
import tensorflow as tf
from keras import layers

NUMERICAL_FEATURES = [
    "education_num",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "fnlwgt",
]

CATEGORICAL_FEATURES = [
    "workclass",
    "marital_status",
    "relationship",
    "gender",
    "education",
    "occupation",
]

FEATURES_TO_DISCRETIZE = ["age"]

FEATURES_TO_EMBED = ["native_country"]


def create_input_dict():
    categorical_features_input = {
        feature: keras.Input(shape=(1,), dtype=tf.string, name=feature)
        for feature in CATEGORICAL_FEATURES
    }

    numerical_features_input = {
        feature: keras.Input(shape=(1,), dtype=tf.float32, name=feature)
        for feature in NUMERICAL_FEATURES
    }

    discretize_features_input = {
        feature: keras.Input(shape=(1,), dtype=tf.float32, name=feature)
        for feature in FEATURES_TO_DISCRETIZE
    }

    embedding_features_input = {
        feature: keras.Input(shape=(1,), dtype=tf.string, name=feature)
        for feature in FEATURES_TO_EMBED
    }

    return {
        **numerical_features_input,
        **categorical_features_input,
        **discretize_features_input,
        **embedding_features_input,
    }


class FeaturePreprocessor(keras.models.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # set preprocessing layers
        self.normalizer = {feature: layers.Normalization() for feature in NUMERICAL_FEATURES}
        self.categoric_string_lookup = {
            feature: layers.StringLookup() for feature in CATEGORICAL_FEATURES
        }
        self.integer_lookup = {
            feature: layers.IntegerLookup(output_mode="multi_hot")
            for feature in CATEGORICAL_FEATURES
        }
        self.discretizer = {
            feature: layers.Discretization(num_bins=10) for feature in FEATURES_TO_DISCRETIZE
        }
        self.embedding_string_lookup = {
            feature: layers.StringLookup() for feature in FEATURES_TO_EMBED
        }

    def apply_preprocessor(self, inputs, preprocessor_dict):
        """Helper function to apply preprocessing layers in the forward pass"""
        return keras.layers.concatenate(
            [preprocessor(inputs[feature]) for feature, preprocessor in preprocessor_dict.items()]
        )

    def adapt(self, data):
        """Update layer states"""
        for feature, preprocessor in self.normalizer.items():
            preprocessor.adapt(data[feature])

        for feature, preprocessor in self.discretizer.items():
            preprocessor.adapt(data[feature])

        for feature, preprocessor in self.categoric_string_lookup.items():
            preprocessor.adapt(data[feature])
            self.integer_lookup[feature].adapt(preprocessor(data[feature]))

        for feature, preprocessor in self.embedding_string_lookup.items():
            preprocessor.adapt(data[feature])

        vocabulary_size = preprocessor.vocabulary_size()
        embedding_size = int(tf.math.sqrt(float(vocabulary_size)))

        # create sequential model for the embedding feature
        self.embedding = keras.models.Sequential(
            [
                keras.layers.InputLayer(shape=(1,), dtype=tf.string),
                self.embedding_string_lookup[FEATURES_TO_EMBED[0]],
                layers.Embedding(input_dim=vocabulary_size, output_dim=embedding_size),
                layers.Reshape((-1,)),
            ]
        )

    def call(self, inputs={}):  # noqa: B006
        """Apply adapted layers"""
        numerical_features = self.apply_preprocessor(inputs, self.normalizer)

        categorical_features = {
            feature: self.categoric_string_lookup[feature](inputs[feature])
            for feature in CATEGORICAL_FEATURES
        }
        categorical_features = self.apply_preprocessor(categorical_features, self.integer_lookup)

        embedding_features = self.embedding(inputs[FEATURES_TO_EMBED[0]])

        discretize_features = self.apply_preprocessor(inputs, self.discretizer)
        discretize_features = tf.cast(discretize_features, dtype=tf.float32)

        return keras.layers.concatenate(
            [
                numerical_features,
                categorical_features,
                discretize_features,
                embedding_features,
            ]
        )


def adult_data(rng, n):
    """Synthetic rows with the adult.data columns, value sets and ranges."""

    def pick(prefix, count):
        return rng.choice(np.array([f" {prefix}-{i}" for i in range(count)]), size=n)

    columns = {
        "age": rng.integers(17, 91, size=n).astype(np.float32),
        "workclass": pick("workclass", 9),
        "fnlwgt": rng.integers(12285, 1484706, size=n).astype(np.float32),
        "education": pick("education", 16),
        "education_num": rng.integers(1, 17, size=n).astype(np.float32),
        "marital_status": pick("marital", 7),
        "occupation": pick("occupation", 15),
        "relationship": pick("relationship", 6),
        "gender": rng.choice(np.array([" Female", " Male"]), size=n),
        "capital_gain": ((rng.uniform(size=n) < 0.1) * rng.integers(0, 99999, size=n)).astype(
            np.float32
        ),
        "capital_loss": ((rng.uniform(size=n) < 0.05) * rng.integers(0, 4356, size=n)).astype(
            np.float32
        ),
        "hours_per_week": rng.integers(1, 100, size=n).astype(np.float32),
        "native_country": pick("country", 20),
    }
    data = {feature: values.reshape(n, 1) for feature, values in columns.items()}
    labels_binary = 1.0 * (rng.uniform(size=n) < 0.24)
    return data, labels_binary


def raw_splits():
    rng = np.random.default_rng(0)
    return adult_data(rng, 128), adult_data(rng, 64)


def preprocessing():
    (train_data_dict, _), _ = raw_splits()
    input_dict = create_input_dict()
    # update preprocessing layer states
    preprocessing_layer = FeaturePreprocessor()
    preprocessing_layer.adapt(train_data_dict)

    preprocessed_inputs = preprocessing_layer(input_dict)
    preprocessing_model = keras.Model(input_dict, preprocessed_inputs)
    return preprocessed_inputs, preprocessing_model


def build_model():
    preprocessed_inputs, _ = preprocessing()
    x = keras.layers.Dense(64, activation="relu")(preprocessed_inputs)
    x = keras.layers.Dense(32, activation="relu")(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    training_model = keras.Model(inputs=preprocessed_inputs, outputs=outputs)

    training_model.compile(
        loss=keras.losses.BinaryCrossentropy(),
        optimizer=keras.optimizers.RMSprop(learning_rate=0.001),
        metrics=[
            keras.metrics.BinaryAccuracy(name="accuracy"),
            keras.metrics.AUC(name="auc"),
        ],
    )
    return training_model


@functools.cache  # preprocessed once, as the example does: its adapt is not repeatable
def load_data():
    _, preprocessing_model = preprocessing()
    (train_data_dict, train_labels), (test_data_dict, test_labels) = raw_splits()
    x_train = keras.ops.convert_to_numpy(preprocessing_model(train_data_dict))
    x_test = keras.ops.convert_to_numpy(preprocessing_model(test_data_dict))
    return (x_train, train_labels), (x_test, test_labels)
