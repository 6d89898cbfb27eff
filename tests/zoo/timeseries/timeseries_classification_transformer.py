# keras-io: examples/timeseries/timeseries_classification_transformer.py
"""Transformer timeseries classifier on FordA: synthetic z-normalized univariate series of
32 time steps (cut from 500) with labels 0/1 in place of the UCR TSV files; head_size cut
from 256 to 16, num_heads from 4 to 2, transformer blocks from 4 to 2, mlp_units from
[128] to [16]; the example's `build_model(input_shape, ...)` is named `make_model` here
(`build_model()` is the task-file entry point); the EarlyStopping callback is given by
`callbacks()`. A validation split of 32 examples, as the
example's fit takes validation data."""

import keras
import numpy as np
from keras import layers

n_classes = 2
series_length = 32


def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
    # Attention and Normalization
    x = layers.MultiHeadAttention(key_dim=head_size, num_heads=num_heads, dropout=dropout)(
        inputs, inputs
    )
    x = layers.Dropout(dropout)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    res = x + inputs

    # Feed Forward Part
    x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
    x = layers.Dropout(dropout)(x)
    x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return x + res


def make_model(
    input_shape,
    head_size,
    num_heads,
    ff_dim,
    num_transformer_blocks,
    mlp_units,
    dropout=0,
    mlp_dropout=0,
):
    inputs = keras.Input(shape=input_shape)
    x = inputs
    for _ in range(num_transformer_blocks):
        x = transformer_encoder(x, head_size, num_heads, ff_dim, dropout)

    x = layers.GlobalAveragePooling1D(data_format="channels_last")(x)
    for dim in mlp_units:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(mlp_dropout)(x)
    outputs = layers.Dense(n_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def build_model():
    model = make_model(
        (series_length, 1),
        head_size=16,
        num_heads=2,
        ff_dim=4,
        num_transformer_blocks=2,
        mlp_units=[16],
        mlp_dropout=0.4,
        dropout=0.25,
    )
    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=1e-4),
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.normal(size=(n, series_length))
        x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
        x = x.reshape((x.shape[0], x.shape[1], 1))
        y = rng.integers(0, n_classes, size=(n,))
        return x, y

    return split(128), split(32), split(64)
