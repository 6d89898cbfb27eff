# keras-io: examples/structured_data/deep_neural_decision_forests.py
"""Neural decision forest (the example's second experiment) on Census Income: synthetic
examples with the 5 numeric features (float32) and the 8 categorical features as int32
indices over small vocabularies (as the example's tf.data `encode_categorical` yields
them), labels 0/1, in place of the UCI adult download and CSV files; num_trees cut from 25
to 4; each tree's randomly sampled `used_features_mask` is kept in a non-trainable weight
(in place of a bare tensor) so that a saved model reloads with the same mask; the models
take `**kwargs` and have `get_config()` for saving."""

import math

import keras
import numpy as np
from keras import layers, ops
from keras.layers import StringLookup

# A list of the numerical feature names.
NUMERIC_FEATURE_NAMES = [
    "age",
    "education_num",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
]
# A dictionary of the categorical features and their vocabulary.
CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "workclass": [f"w{i}" for i in range(9)],
    "education": [f"e{i}" for i in range(16)],
    "marital_status": [f"m{i}" for i in range(7)],
    "occupation": [f"o{i}" for i in range(15)],
    "relationship": [f"r{i}" for i in range(6)],
    "race": [f"a{i}" for i in range(5)],
    "gender": [" Female", " Male"],
    "native_country": [f"c{i}" for i in range(20)],
}
# A list of the categorical feature names.
CATEGORICAL_FEATURE_NAMES = list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())
# A list of all the input features.
FEATURE_NAMES = NUMERIC_FEATURE_NAMES + CATEGORICAL_FEATURE_NAMES
# A list of the labels of the target features.
TARGET_LABELS = [" <=50K", " >50K"]

lookup_dict = {}
for feature_name in CATEGORICAL_FEATURE_NAMES:
    vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
    # Create a lookup to convert a string values to an integer indices.
    # Since we are not using a mask token, nor expecting any out of vocabulary
    # (oov) token, we set mask_token to None and num_oov_indices to 0.
    lookup = StringLookup(vocabulary=vocabulary, mask_token=None, num_oov_indices=0)
    lookup_dict[feature_name] = lookup


def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in NUMERIC_FEATURE_NAMES:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
        else:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="int32")
    return inputs


def encode_inputs(inputs):
    encoded_features = []
    for feature_name in inputs:
        if feature_name in CATEGORICAL_FEATURE_NAMES:
            # Create a lookup to convert a string values to an integer indices.
            # Since we are not using a mask token, nor expecting any out of vocabulary
            # (oov) token, we set mask_token to None and num_oov_indices to 0.
            value_index = inputs[feature_name]
            embedding_dims = int(math.sqrt(lookup.vocabulary_size()))
            # Create an embedding layer with the specified dimensions.
            embedding = layers.Embedding(
                input_dim=lookup.vocabulary_size(), output_dim=embedding_dims
            )
            # Convert the index values to embedding representations.
            encoded_feature = embedding(value_index)
        else:
            # Use the numerical features as-is.
            encoded_feature = inputs[feature_name]
            if inputs[feature_name].shape[-1] is None:
                encoded_feature = keras.ops.expand_dims(encoded_feature, -1)

        encoded_features.append(encoded_feature)

    encoded_features = layers.concatenate(encoded_features)
    return encoded_features


@keras.saving.register_keras_serializable(package="zoo_deep_neural_decision_forests")
class NeuralDecisionTree(keras.Model):
    def __init__(self, depth, num_features, used_features_rate, num_classes, **kwargs):
        super().__init__(**kwargs)
        self.depth = depth
        self.num_leaves = 2**depth
        self.num_classes = num_classes
        self.num_features = num_features
        self.used_features_rate = used_features_rate

        # Create a mask for the randomly selected features.
        num_used_features = int(num_features * used_features_rate)
        one_hot = np.eye(num_features)
        sampled_feature_indices = np.random.choice(
            np.arange(num_features), num_used_features, replace=False
        )
        self.used_features_mask = self.add_weight(
            initializer=keras.initializers.Constant(one_hot[sampled_feature_indices]),
            shape=[num_used_features, num_features],
            dtype="float32",
            trainable=False,
        )

        # Initialize the weights of the classes in leaves.
        self.pi = self.add_weight(
            initializer="random_normal",
            shape=[self.num_leaves, self.num_classes],
            dtype="float32",
            trainable=True,
        )

        # Initialize the stochastic routing layer.
        self.decision_fn = layers.Dense(
            units=self.num_leaves, activation="sigmoid", name="decision"
        )

    def call(self, features):
        batch_size = ops.shape(features)[0]

        # Apply the feature mask to the input features.
        features = ops.matmul(
            features, ops.transpose(self.used_features_mask)
        )  # [batch_size, num_used_features]
        # Compute the routing probabilities.
        decisions = ops.expand_dims(
            self.decision_fn(features), axis=2
        )  # [batch_size, num_leaves, 1]
        # Concatenate the routing probabilities with their complements.
        decisions = layers.concatenate(
            [decisions, 1 - decisions], axis=2
        )  # [batch_size, num_leaves, 2]

        mu = ops.ones([batch_size, 1, 1])

        begin_idx = 1
        end_idx = 2
        # Traverse the tree in breadth-first order.
        for level in range(self.depth):
            mu = ops.reshape(mu, [batch_size, -1, 1])  # [batch_size, 2 ** level, 1]
            mu = ops.tile(mu, (1, 1, 2))  # [batch_size, 2 ** level, 2]
            level_decisions = decisions[:, begin_idx:end_idx, :]  # [batch_size, 2 ** level, 2]
            mu = mu * level_decisions  # [batch_size, 2**level, 2]
            begin_idx = end_idx
            end_idx = begin_idx + 2 ** (level + 1)

        mu = ops.reshape(mu, [batch_size, self.num_leaves])  # [batch_size, num_leaves]
        probabilities = keras.activations.softmax(self.pi)  # [num_leaves, num_classes]
        outputs = ops.matmul(mu, probabilities)  # [batch_size, num_classes]
        return outputs

    def get_config(self):
        return {
            "depth": self.depth,
            "num_features": self.num_features,
            "used_features_rate": self.used_features_rate,
            "num_classes": self.num_classes,
        }


@keras.saving.register_keras_serializable(package="zoo_deep_neural_decision_forests")
class NeuralDecisionForest(keras.Model):
    def __init__(self, num_trees, depth, num_features, used_features_rate, num_classes, **kwargs):
        super().__init__(**kwargs)
        self.num_trees = num_trees
        self.depth = depth
        self.num_features = num_features
        self.used_features_rate = used_features_rate
        self.num_classes = num_classes
        self.ensemble = []
        # Initialize the ensemble by adding NeuralDecisionTree instances.
        # Each tree will have its own randomly selected input features to use.
        for _ in range(num_trees):
            self.ensemble.append(
                NeuralDecisionTree(depth, num_features, used_features_rate, num_classes)
            )

    def call(self, inputs):
        # Initialize the outputs: a [batch_size, num_classes] matrix of zeros.
        batch_size = ops.shape(inputs)[0]
        outputs = ops.zeros([batch_size, num_classes])

        # Aggregate the outputs of trees in the ensemble.
        for tree in self.ensemble:
            outputs += tree(inputs)
        # Divide the outputs by the ensemble size to get the average.
        outputs /= len(self.ensemble)
        return outputs

    def get_config(self):
        return {
            "num_trees": self.num_trees,
            "depth": self.depth,
            "num_features": self.num_features,
            "used_features_rate": self.used_features_rate,
            "num_classes": self.num_classes,
        }


learning_rate = 0.01

num_trees = 4
depth = 5
used_features_rate = 0.5
num_classes = len(TARGET_LABELS)


def create_forest_model():
    inputs = create_model_inputs()
    features = encode_inputs(inputs)
    features = layers.BatchNormalization()(features)
    num_features = features.shape[1]

    forest_model = NeuralDecisionForest(
        num_trees, depth, num_features, used_features_rate, num_classes
    )

    outputs = forest_model(features)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = create_forest_model()
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        features = {
            "age": rng.integers(17, 91, size=(n,)),
            "education_num": rng.integers(1, 17, size=(n,)),
            "capital_gain": (rng.uniform(size=(n,)) < 0.1) * rng.uniform(0, 99999, size=(n,)),
            "capital_loss": (rng.uniform(size=(n,)) < 0.05) * rng.uniform(0, 4356, size=(n,)),
            "hours_per_week": rng.integers(1, 100, size=(n,)),
        }
        features = {k: v.astype(np.float32) for k, v in features.items()}
        for name, vocabulary in CATEGORICAL_FEATURES_WITH_VOCABULARY.items():
            features[name] = rng.integers(0, len(vocabulary), size=(n,)).astype(np.int32)
        target = (rng.uniform(size=(n,)) < 0.25).astype(np.int64)
        return features, target

    return split(128), split(64)
