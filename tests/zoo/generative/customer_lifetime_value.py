# keras-io: examples/generative/customer_lifetime_value.py
"""Adapted: synthetic monthly sequences replace the UK Retail data (6 input and 6 output
months as in the example: the 5 temporal features unscaled as the example leaves them, 12
trend features and the 6 following amounts in [0, 1] as its min-max scaling leaves them,
a one-hot country of 8 including StringLookup's OOV slot); the LSTM units 64 -> 16; the
EarlyStopping the example passes to fit is in callbacks().
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import Model, regularizers
from keras.layers import (
    LSTM,
    Concatenate,
    Dense,
    Embedding,
    Flatten,
    GlobalAveragePooling1D,
    Input,
    RepeatVector,
)
from keras_hub.layers import TransformerEncoder

INPUT_SEQUENCE_LENGTH = 6
OUTPUT_SEQUENCE_LENGTH = 6
NUM_COUNTRIES = 8


# For reproducibility across modelling
def set_seeds(seed=42):
    np.random.seed(seed)
    tf.random.set_seed(seed)


def build_hybrid_model(
    input_sequence_length: int,
    output_sequence_length: int,
    num_countries: int,
    d_model: int = 8,
    num_heads: int = 4,
):
    set_seeds(seed=42)

    # Inputs
    temporal_inputs = Input(shape=(input_sequence_length, 5), name="temporal_inputs")
    trend_inputs = Input(shape=(input_sequence_length, 12), name="trend_inputs")
    country_inputs = Input(shape=(num_countries,), dtype="int32", name="country_inputs")

    # Process country features
    country_embedding = Embedding(
        input_dim=num_countries,
        output_dim=d_model,
        mask_zero=False,
        name="country_embedding",
    )(country_inputs)  # Output shape: (batch_size, 1, d_model)

    # Flatten the embedding output
    country_embedding = Flatten(name="flatten_country_embedding")(country_embedding)

    # Repeat the country embedding across timesteps
    country_embedding_repeated = RepeatVector(
        input_sequence_length, name="repeat_country_embedding"
    )(country_embedding)

    # Projection of temporal inputs to match Transformer dimensions
    temporal_projection = Dense(d_model, activation="tanh", name="temporal_projection")(
        temporal_inputs
    )

    # Combine all features
    combined_features = Concatenate()([temporal_projection, country_embedding_repeated])

    transformer_output = combined_features
    for _ in range(3):
        transformer_output = TransformerEncoder(intermediate_dim=16, num_heads=num_heads)(
            transformer_output
        )

    lstm_output = LSTM(units=16, name="lstm_trend")(trend_inputs)

    transformer_flattened = GlobalAveragePooling1D(name="flatten_transformer")(transformer_output)
    transformer_flattened = Dense(1, activation="sigmoid")(transformer_flattened)
    # Concatenate flattened Transformer output with LSTM output
    merged_features = Concatenate(name="concatenate_transformer_lstm")(
        [transformer_flattened, lstm_output]
    )
    # Repeat the merged features to match the output sequence length
    decoder_initial = RepeatVector(output_sequence_length, name="repeat_merged_features")(
        merged_features
    )

    decoder_lstm = LSTM(
        units=16,
        return_sequences=True,
        recurrent_regularizer=regularizers.L1L2(l1=1e-5, l2=1e-4),
    )(decoder_initial)

    # Output Dense layer
    output = Dense(units=1, activation="linear", name="output_dense")(decoder_lstm)

    model = Model(inputs=[temporal_inputs, trend_inputs, country_inputs], outputs=output)

    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
        loss="mse",
        metrics=["mse"],
    )

    return model


def build_model():
    return build_hybrid_model(
        input_sequence_length=INPUT_SEQUENCE_LENGTH,
        output_sequence_length=OUTPUT_SEQUENCE_LENGTH,
        num_countries=NUM_COUNTRIES,
        d_model=8,
        num_heads=4,
    )


def callbacks():
    return [
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
    ]


def _split(rng, n):
    month = rng.integers(1, 13, size=(n, INPUT_SEQUENCE_LENGTH))
    year = rng.integers(2010, 2012, size=(n, INPUT_SEQUENCE_LENGTH))
    temporal = np.stack(
        [
            month,
            year,
            np.sin(2 * np.pi * month / 12),
            np.cos(2 * np.pi * month / 12),
            (month % 3 == 1).astype(int),
        ],
        axis=-1,
    ).astype(np.float32)
    trend = rng.random((n, INPUT_SEQUENCE_LENGTH, 12)).astype(np.float32)
    country = np.eye(NUM_COUNTRIES, dtype="int32")[rng.integers(0, NUM_COUNTRIES, size=n)]
    outputs = rng.random((n, OUTPUT_SEQUENCE_LENGTH)).astype(np.float32)
    return [temporal, trend, country], outputs


def load_data():
    rng = np.random.default_rng(0)
    train, test = _split(rng, 128), _split(rng, 64)
    return train, _split(rng, 32), test
