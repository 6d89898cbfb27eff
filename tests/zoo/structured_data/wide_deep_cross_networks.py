# keras-io: examples/structured_data/wide_deep_cross_networks.py
"""Deep & Cross network (the example's third experiment) on Covertype: synthetic examples
with the 10 numeric features (float32) and the 2 categorical features as strings
(Wilderness_Area over 4 values, Soil_Type over 40), labels 0-6, as unbatched
`tf.data.Dataset`s of (dict, label) since Keras does not take string NumPy arrays, in
place of the UCI download and CSV files."""

import math

import keras
import numpy as np
import tensorflow as tf
from keras import layers

NUMERIC_FEATURE_NAMES = [
    "Aspect",
    "Elevation",
    "Hillshade_3pm",
    "Hillshade_9am",
    "Hillshade_Noon",
    "Horizontal_Distance_To_Fire_Points",
    "Horizontal_Distance_To_Hydrology",
    "Horizontal_Distance_To_Roadways",
    "Slope",
    "Vertical_Distance_To_Hydrology",
]

soil_type_values = [f"soil_type_{idx + 1}" for idx in range(40)]
wilderness_area_values = [f"area_type_{idx + 1}" for idx in range(4)]

CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "Soil_Type": soil_type_values,
    "Wilderness_Area": wilderness_area_values,
}

CATEGORICAL_FEATURE_NAMES = list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())

FEATURE_NAMES = NUMERIC_FEATURE_NAMES + CATEGORICAL_FEATURE_NAMES

TARGET_FEATURE_LABELS = ["0", "1", "2", "3", "4", "5", "6"]

NUM_CLASSES = len(TARGET_FEATURE_LABELS)

learning_rate = 0.001
dropout_rate = 0.1

hidden_units = [32, 32]


def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in NUMERIC_FEATURE_NAMES:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
        else:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="string")
    return inputs


def encode_inputs(inputs, use_embedding=False):
    encoded_features = []
    for feature_name in inputs:
        if feature_name in CATEGORICAL_FEATURE_NAMES:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
            # Create a lookup to convert string values to an integer indices.
            # Since we are not using a mask token nor expecting any out of vocabulary
            # (oov) token, we set mask_token to None and  num_oov_indices to 0.
            lookup = layers.StringLookup(
                vocabulary=vocabulary,
                mask_token=None,
                num_oov_indices=0,
                output_mode="int" if use_embedding else "binary",
            )
            if use_embedding:
                # Convert the string input values into integer indices.
                encoded_feature = lookup(inputs[feature_name])
                embedding_dims = int(math.sqrt(len(vocabulary)))
                # Create an embedding layer with the specified dimensions.
                embedding = layers.Embedding(input_dim=len(vocabulary), output_dim=embedding_dims)
                # Convert the index values to embedding representations.
                encoded_feature = embedding(encoded_feature)
            else:
                # Convert the string input values into a one hot encoding.
                encoded_feature = lookup(keras.ops.expand_dims(inputs[feature_name], -1))
        else:
            # Use the numerical features as-is.
            encoded_feature = keras.ops.expand_dims(inputs[feature_name], -1)

        encoded_features.append(encoded_feature)

    all_features = layers.concatenate(encoded_features)
    return all_features


def create_deep_and_cross_model():
    inputs = create_model_inputs()
    x0 = encode_inputs(inputs, use_embedding=True)

    cross = x0
    for _ in hidden_units:
        units = cross.shape[-1]
        x = layers.Dense(units)(cross)
        cross = x0 * x + cross
    cross = layers.BatchNormalization()(cross)

    deep = x0
    for units in hidden_units:
        deep = layers.Dense(units)(deep)
        deep = layers.BatchNormalization()(deep)
        deep = layers.ReLU()(deep)
        deep = layers.Dropout(dropout_rate)(deep)

    merged = layers.concatenate([cross, deep])
    outputs = layers.Dense(units=NUM_CLASSES, activation="softmax")(merged)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def build_model():
    model = create_deep_and_cross_model()
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
            "Elevation": rng.integers(1859, 3859, size=n),
            "Aspect": rng.integers(0, 361, size=n),
            "Slope": rng.integers(0, 67, size=n),
            "Horizontal_Distance_To_Hydrology": rng.integers(0, 1398, size=n),
            "Vertical_Distance_To_Hydrology": rng.integers(-173, 602, size=n),
            "Horizontal_Distance_To_Roadways": rng.integers(0, 7118, size=n),
            "Hillshade_9am": rng.integers(0, 255, size=n),
            "Hillshade_Noon": rng.integers(0, 255, size=n),
            "Hillshade_3pm": rng.integers(0, 255, size=n),
            "Horizontal_Distance_To_Fire_Points": rng.integers(0, 7174, size=n),
        }
        features = {k: v.astype(np.float32) for k, v in features.items()}
        features["Wilderness_Area"] = rng.choice(np.array(wilderness_area_values), size=n)
        features["Soil_Type"] = rng.choice(np.array(soil_type_values), size=n)
        target = rng.integers(0, NUM_CLASSES, size=n)
        return tf.data.Dataset.from_tensor_slices((features, target))

    return split(128), split(64)
