# keras-io: examples/structured_data/feature_engineering_with_custom_layer.py
"""Feature engineering in a custom Keras layer on the heart disease data: synthetic
patients (12 float32 features of shape (1,) and the "thal" string feature) with labels
0/1, as unbatched `tf.data.Dataset`s of (dict, label) since Keras does not take string
NumPy arrays, in place of the heart.csv download and `make_csv_dataset`; `keras` in place
of `tf.keras`."""

import keras
import numpy as np
import tensorflow as tf

binary_features = ["sex", "fbs", "exang"]
numeric_features = [
    "trestbps",
    "chol",
    "thalach",
    "oldpeak",
    "slope",
    "cp",
    "restecg",
    "ca",
]
categoric_features = ["thal"]

dtype_mapper = {
    "age": tf.float32,
    "sex": tf.float32,
    "cp": tf.float32,
    "trestbps": tf.float32,
    "chol": tf.float32,
    "fbs": tf.float32,
    "restecg": tf.float32,
    "thalach": tf.float32,
    "exang": tf.float32,
    "oldpeak": tf.float32,
    "slope": tf.float32,
    "ca": tf.float32,
    "thal": tf.string,
}


def create_inputs(data_type_mapper):
    """Create model inputs

    Args:
        data_type_mapper (dict): Dictionary with feature as key and dtype as value
                                 For example {'age': tf.float32, ...}
    Returns:
        (dict): Keras inputs for each feature
    """
    return {
        feature: keras.Input(shape=(1,), name=feature, dtype=dtype)
        for feature, dtype in data_type_mapper.items()
    }


@keras.saving.register_keras_serializable(package="zoo_feature_engineering_with_custom_layer")
class FeatureLayer(keras.layers.Layer):
    """Custom Layer for Feature engineering steps"""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def call(self, inputs):
        age_and_gender = tf.cast(
            tf.math.logical_and(inputs["age"] > 50, inputs["sex"] == 1),
            dtype=tf.float32,
        )

        thal_fixed_category = tf.cast(inputs["thal"] == "fixed", dtype=tf.float32)
        thal_reversible_category = tf.cast(inputs["thal"] == "reversible", dtype=tf.float32)
        thal_normal_category = tf.cast(inputs["thal"] == "normal", dtype=tf.float32)

        trest_chol_ratio = inputs["trestbps"] / inputs["chol"]
        trest_cross_thalach = inputs["trestbps"] * inputs["thalach"]

        # concat all newly created features into one layer
        feature_list = [
            thal_fixed_category,
            thal_reversible_category,
            thal_normal_category,
            age_and_gender,
            trest_chol_ratio,
            trest_cross_thalach,
        ]

        engineered_feature_layer = keras.layers.concatenate(feature_list)

        numeric_feature_layer = keras.layers.concatenate(
            [inputs[feature] for feature in numeric_features]
        )

        binary_feature_layer = keras.layers.concatenate(
            [inputs[feature] for feature in binary_features]
        )

        # Add the rest of features into final feature layer
        feature_layer = keras.layers.concatenate(
            [engineered_feature_layer, numeric_feature_layer, binary_feature_layer]
        )

        return feature_layer


def build_model():
    feature_layer_inputs = create_inputs(dtype_mapper)
    # setup model, this is basically Logistic regression
    feature_layer = FeatureLayer(name="feature_layer")(feature_layer_inputs)
    x = keras.layers.BatchNormalization(name="batch_norm")(feature_layer)
    output = keras.layers.Dense(1, activation="sigmoid", name="target")(x)
    model = keras.Model(inputs=feature_layer_inputs, outputs=output)
    model.compile(
        loss=keras.losses.BinaryCrossentropy(),
        optimizer=keras.optimizers.Adam(learning_rate=0.01),
        metrics=[
            keras.metrics.BinaryAccuracy(name="accuracy"),
            keras.metrics.AUC(name="auc"),
        ],
    )
    return model


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


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        columns, target = heart_data(rng, n)
        x = {
            name: (values if name == "thal" else values.astype(np.float32)).reshape(n, 1)
            for name, values in columns.items()
        }
        return tf.data.Dataset.from_tensor_slices((x, target.astype(np.int32)))

    return split(128), split(64)
