# keras-io: examples/structured_data/imbalanced_classification.py
"""Imbalanced classification (credit card fraud): synthetic float features (30 per
transaction) with uint8 targets of shape (n, 1), 12 of the 128 training targets positive,
in place of the Kaggle CSV; the features are normalized with training-set statistics as
the example does; `CLASS_WEIGHT` holds the example's 1/count weights for those counts;
the ModelCheckpoint callback (it writes files) is left out.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np

num_features = 30
num_positive_train = 12
num_train = 128

# weight_for_0 = 1.0 / counts[0], weight_for_1 = 1.0 / counts[1]
CLASS_WEIGHT = {0: 1.0 / (num_train - num_positive_train), 1: 1.0 / num_positive_train}


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(num_features,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )

    metrics = [
        keras.metrics.FalseNegatives(name="fn"),
        keras.metrics.FalsePositives(name="fp"),
        keras.metrics.TrueNegatives(name="tn"),
        keras.metrics.TruePositives(name="tp"),
        keras.metrics.Precision(name="precision"),
        keras.metrics.Recall(name="recall"),
    ]

    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss="binary_crossentropy",
        metrics=metrics,
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def targets(n, positives):
        t = np.zeros((n, 1), dtype="uint8")
        t[rng.permutation(n)[:positives], 0] = 1
        return t

    train_features = rng.normal(0.0, 50.0, size=(num_train, num_features)).astype("float32")
    train_targets = targets(num_train, num_positive_train)
    test_features = rng.normal(0.0, 50.0, size=(64, num_features)).astype("float32")
    test_targets = targets(64, 6)
    val_features = rng.normal(0.0, 50.0, size=(32, num_features)).astype("float32")
    val_targets = targets(32, 3)

    # Normalize the data using training set statistics
    mean = np.mean(train_features, axis=0)
    train_features -= mean
    val_features -= mean
    test_features -= mean
    std = np.std(train_features, axis=0)
    train_features /= std
    val_features /= std
    test_features /= std

    return (
        (train_features, train_targets),
        (val_features, val_targets),
        (test_features, test_targets),
    )
