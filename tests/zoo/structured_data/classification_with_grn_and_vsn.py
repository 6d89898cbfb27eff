# keras-io: examples/structured_data/classification_with_grn_and_vsn.py
"""Gated Residual and Variable Selection Networks on Census Income (KDD): synthetic
examples with 3 of the 7 numeric features (float32) and 4 of the 34 categorical features
as int64 indices over small vocabularies (as the example's tf.data `process` yields them),
binary income labels and the instance_weight column as sample weights, in place of the
UCI download and CSV files; encoding_size cut from 16 to 8; the layers take `**kwargs`
and have `get_config()` for saving; the EarlyStopping callback is given by
`callbacks()`. A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

# Numeric feature names.
NUMERIC_FEATURE_NAMES = [
    "age",
    "wage_per_hour",
    "weeks_worked_in_year",
]
# Categorical features and their vocabulary lists.
CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "class_of_worker": [str(v) for v in range(9)],
    "education": [str(v) for v in range(17)],
    "marital_stat": [str(v) for v in range(7)],
    "sex": ["Female", "Male"],
}
# All features names.
FEATURE_NAMES = NUMERIC_FEATURE_NAMES + list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())

learning_rate = 0.001
dropout_rate = 0.15
encoding_size = 8


def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            # Make them int64, they are Categorical (whole units)
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="int64")
        else:
            # Make them float32, they are Real numbers
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
    return inputs


@keras.saving.register_keras_serializable(package="zoo_classification_with_grn_and_vsn")
class GatedLinearUnit(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.linear = layers.Dense(units)
        self.sigmoid = layers.Dense(units, activation="sigmoid")

    def call(self, inputs):
        return self.linear(inputs) * self.sigmoid(inputs)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


@keras.saving.register_keras_serializable(package="zoo_classification_with_grn_and_vsn")
class GatedResidualNetwork(layers.Layer):
    def __init__(self, units, dropout_rate, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dropout_rate = dropout_rate
        self.elu_dense = layers.Dense(units, activation="elu")
        self.linear_dense = layers.Dense(units)
        self.dropout = layers.Dropout(dropout_rate)
        self.gated_linear_unit = GatedLinearUnit(units)
        self.layer_norm = layers.LayerNormalization()
        self.project = layers.Dense(units)

    def call(self, inputs):
        x = self.elu_dense(inputs)
        x = self.linear_dense(x)
        x = self.dropout(x)
        if inputs.shape[-1] != self.units:
            inputs = self.project(inputs)
        x = inputs + self.gated_linear_unit(x)
        x = self.layer_norm(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "dropout_rate": self.dropout_rate})
        return config


@keras.saving.register_keras_serializable(package="zoo_classification_with_grn_and_vsn")
class VariableSelection(layers.Layer):
    def __init__(self, num_features, units, dropout_rate, **kwargs):
        super().__init__(**kwargs)
        self.num_features = num_features
        self.units = units
        self.dropout_rate = dropout_rate
        # Create an embedding layers with the specified dimensions
        self.embeddings = dict()
        for input_ in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[input_]
            embedding_encoder = layers.Embedding(
                input_dim=len(vocabulary), output_dim=self.units, name=input_
            )
            self.embeddings[input_] = embedding_encoder

        # Projection layers for numeric features
        self.proj_layer = dict()
        for input_ in NUMERIC_FEATURE_NAMES:
            proj_layer = layers.Dense(units=self.units)
            self.proj_layer[input_] = proj_layer

        self.grns = list()
        # Create a GRN for each feature independently
        for idx in range(num_features):  # noqa: B007
            grn = GatedResidualNetwork(units, dropout_rate)
            self.grns.append(grn)
        # Create a GRN for the concatenation of all the features
        self.grn_concat = GatedResidualNetwork(units, dropout_rate)
        self.softmax = layers.Dense(units=num_features, activation="softmax")

    def call(self, inputs):
        concat_inputs = []
        for input_ in inputs:
            if input_ in CATEGORICAL_FEATURES_WITH_VOCABULARY:
                max_index = self.embeddings[input_].input_dim - 1  # Clamp the indices
                # torch had some index errors during embedding hence the clip function
                embedded_feature = self.embeddings[input_](
                    keras.ops.clip(inputs[input_], 0, max_index)
                )
                concat_inputs.append(embedded_feature)
            else:
                # Project the numeric feature to encoding_size using linear transformation.
                proj_feature = keras.ops.expand_dims(inputs[input_], -1)
                proj_feature = self.proj_layer[input_](proj_feature)
                concat_inputs.append(proj_feature)

        v = layers.concatenate(concat_inputs)
        v = self.grn_concat(v)
        v = keras.ops.expand_dims(self.softmax(v), axis=-1)
        x = []
        for idx, input in enumerate(concat_inputs):
            x.append(self.grns[idx](input))
        x = keras.ops.stack(x, axis=1)

        # tensorflow backend
        result_tf = keras.ops.squeeze(tf.matmul(v, x, transpose_a=True), axis=1)
        return result_tf

    # to remove the build warnings
    def build(self):
        self.built = True

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_features": self.num_features,
                "units": self.units,
                "dropout_rate": self.dropout_rate,
            }
        )
        return config


def create_model(encoding_size):
    inputs = create_model_inputs()
    num_features = len(inputs)
    features = VariableSelection(num_features, encoding_size, dropout_rate)(inputs)
    outputs = layers.Dense(units=1, activation="sigmoid")(features)
    # Functional model
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = create_model(encoding_size)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss=keras.losses.BinaryCrossentropy(),
        metrics=[keras.metrics.BinaryAccuracy(name="accuracy")],
    )
    return model


def callbacks():
    # Create an early stopping callback.
    return [
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True)
    ]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        features = {
            "age": rng.integers(0, 91, size=(n,)).astype(np.float32),
            "wage_per_hour": (rng.uniform(size=(n,)) < 0.1) * rng.uniform(0, 2000, size=(n,)),
            "weeks_worked_in_year": rng.integers(0, 53, size=(n,)).astype(np.float32),
        }
        features["wage_per_hour"] = features["wage_per_hour"].astype(np.float32)
        for name, vocabulary in CATEGORICAL_FEATURES_WITH_VOCABULARY.items():
            features[name] = rng.integers(0, len(vocabulary), size=(n,)).astype(np.int64)
        target = (rng.uniform(size=(n,)) < 0.1).astype(np.float32)
        # Get the instance weight.
        weight = rng.uniform(100.0, 5000.0, size=(n,)).astype(np.float32)
        return features, target, weight

    train, test = split(128), split(64)
    return train, split(32), test
