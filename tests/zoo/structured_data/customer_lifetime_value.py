# keras-io: examples/structured_data/customer_lifetime_value.py
"""Hybrid Transformer/LSTM customer lifetime value model: synthetic monthly sequences (6
input months: 5 temporal features, 12 trend features scaled to [0, 1]; 6 output months of
scaled amounts) and one-hot countries over 8 values (cut from the dataset's ~37 + 1), in
place of the UCI Online Retail download and its pandas preprocessing; LSTM units cut from
64 to 16 and the TransformerEncoder stack from 3 to 2."""

import keras
import numpy as np
from keras import Model, layers, regularizers
from keras_hub.layers import TransformerEncoder

input_sequence_length = 6
output_sequence_length = 6
num_countries = 8


def build_hybrid_model(
    input_sequence_length: int,
    output_sequence_length: int,
    num_countries: int,
    d_model: int = 8,
    num_heads: int = 4,
):
    keras.utils.set_random_seed(seed=42)

    # Inputs
    temporal_inputs = layers.Input(shape=(input_sequence_length, 5), name="temporal_inputs")
    trend_inputs = layers.Input(shape=(input_sequence_length, 12), name="trend_inputs")
    country_inputs = layers.Input(shape=(num_countries,), dtype="int32", name="country_inputs")

    # Process country features
    country_embedding = layers.Embedding(
        input_dim=num_countries,
        output_dim=d_model,
        mask_zero=False,
        name="country_embedding",
    )(country_inputs)  # Output shape: (batch_size, 1, d_model)

    # Flatten the embedding output
    country_embedding = layers.Flatten(name="flatten_country_embedding")(country_embedding)

    # Repeat the country embedding across timesteps
    country_embedding_repeated = layers.RepeatVector(
        input_sequence_length, name="repeat_country_embedding"
    )(country_embedding)

    # Projection of temporal inputs to match Transformer dimensions
    temporal_projection = layers.Dense(d_model, activation="tanh", name="temporal_projection")(
        temporal_inputs
    )

    # Combine all features
    combined_features = layers.Concatenate()([temporal_projection, country_embedding_repeated])

    transformer_output = combined_features
    for _ in range(2):
        transformer_output = TransformerEncoder(intermediate_dim=16, num_heads=num_heads)(
            transformer_output
        )

    lstm_output = layers.LSTM(units=16, name="lstm_trend")(trend_inputs)

    transformer_flattened = layers.GlobalAveragePooling1D(name="flatten_transformer")(
        transformer_output
    )
    transformer_flattened = layers.Dense(1, activation="sigmoid")(transformer_flattened)
    # Concatenate flattened Transformer output with LSTM output
    merged_features = layers.Concatenate(name="concatenate_transformer_lstm")(
        [transformer_flattened, lstm_output]
    )
    # Repeat the merged features to match the output sequence length
    decoder_initial = layers.RepeatVector(output_sequence_length, name="repeat_merged_features")(
        merged_features
    )

    decoder_lstm = layers.LSTM(
        units=16,
        return_sequences=True,
        recurrent_regularizer=regularizers.L1L2(l1=1e-5, l2=1e-4),
    )(decoder_initial)

    # Output Dense layer
    output = layers.Dense(units=1, activation="linear", name="output_dense")(decoder_lstm)

    model = Model(inputs=[temporal_inputs, trend_inputs, country_inputs], outputs=output)

    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
        loss="mse",
        metrics=["mse"],
    )

    return model


def build_model():
    return build_hybrid_model(
        input_sequence_length=input_sequence_length,
        output_sequence_length=output_sequence_length,
        num_countries=num_countries,
        d_model=8,
        num_heads=4,
    )


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        month = rng.integers(1, 13, size=(n, 1)) + np.arange(input_sequence_length)
        month = (month - 1) % 12 + 1
        year = 2010 + (month < month[:, :1])
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
        trend = rng.uniform(0.0, 1.0, size=(n, input_sequence_length, 12)).astype(np.float32)
        # StringLookup(output_mode="one_hot", num_oov_indices=1) of the country names.
        countries = rng.integers(0, num_countries, size=(n,))
        static = np.eye(num_countries, dtype=np.int32)[countries]
        outputs = rng.uniform(0.0, 1.0, size=(n, output_sequence_length)).astype(np.float32)
        return [temporal, trend, static], outputs

    return split(128), split(64)
