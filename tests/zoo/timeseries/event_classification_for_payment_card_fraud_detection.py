# keras-io: examples/timeseries/event_classification_for_payment_card_fraud_detection.py
"""Payment card fraud detection with a feed-forward network: synthetic z-normalized
values of the 14 Temporian-engineered features (moving sums, counts and fraud rates over
7/14/28 days, calendar hour and day of week) as a dict keyed by feature name, with int32
labels about 20% fraudulent as after the example's rejection resampling, in place of the
simulated transactions and the Temporian preprocessing (Temporian is not installed)."""

import keras
import numpy as np

input_feature_names = []
for n in [7, 14, 28]:
    input_feature_names.append(f"sum_transactions_{n}_days")
    input_feature_names.append(f"count_transactions_{n}_days")
for n in [7, 14, 28]:
    input_feature_names.append(f"count_fraud_transactions_{n}_days")
    input_feature_names.append(f"rate_fraud_transactions_{n}_days")
input_feature_names += ["calendar_hour", "calendar_day_of_week"]

# Target ratio of fraudulent transactions in the training dataset.
target_rate = 0.2


def build_model():
    inputs = [keras.Input(shape=(1,), name=name) for name in input_feature_names]
    x = keras.layers.concatenate(inputs)
    x = keras.layers.Dense(32, activation="sigmoid")(x)
    x = keras.layers.Dense(16, activation="sigmoid")(x)
    x = keras.layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs=inputs, outputs=x)

    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.BinaryCrossentropy(),
        metrics=[keras.metrics.Accuracy(), keras.metrics.AUC()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        features = {name: rng.normal(size=(n,)).astype(np.float32) for name in input_feature_names}
        labels = (rng.uniform(size=(n,)) < target_rate).astype(np.int32)
        return features, labels

    return split(128), split(64)
