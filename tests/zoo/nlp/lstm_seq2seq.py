# keras-io: examples/nlp/lstm_seq2seq.py
"""Adapted: synthetic one-hot sentences (71 input and 93 target characters, as the 10000
fra-eng pairs give; "\\t" start, "\\n" end, " " padding; targets ahead of the decoder inputs by
one step) in place of the download; sequence lengths 16/59 -> 16/32, latent_dim 256 -> 64."""

import keras
import numpy as np

latent_dim = 64  # Latent dimensionality of the encoding space.
num_encoder_tokens = 71
num_decoder_tokens = 93
max_encoder_seq_length = 16
max_decoder_seq_length = 32
# Indices in the sorted character sets: " " is the first input character; "\t", "\n" and
# " " are the first three target characters.
INPUT_SPACE, TARGET_START, TARGET_END, TARGET_SPACE = 0, 0, 1, 2


def build_model():
    # Define an input sequence and process it.
    encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
    encoder = keras.layers.LSTM(latent_dim, return_state=True)
    encoder_outputs, state_h, state_c = encoder(encoder_inputs)  # noqa: RUF059 (as in the example)

    # We discard `encoder_outputs` and only keep the states.
    encoder_states = [state_h, state_c]

    # Set up the decoder, using `encoder_states` as initial state.
    decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))

    # We set up our decoder to return full output sequences,
    # and to return internal states as well. We don't use the
    # return states in the training model, but we will use them in inference.
    decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
    decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
    decoder_outputs = decoder_dense(decoder_outputs)

    # Define the model that will turn
    # `encoder_input_data` & `decoder_input_data` into `decoder_target_data`
    model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)
    model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def _split(rng, n):
    encoder_input_data = np.zeros((n, max_encoder_seq_length, num_encoder_tokens), dtype="float32")
    decoder_input_data = np.zeros((n, max_decoder_seq_length, num_decoder_tokens), dtype="float32")
    decoder_target_data = np.zeros((n, max_decoder_seq_length, num_decoder_tokens), dtype="float32")
    for i in range(n):
        input_text = rng.integers(1, num_encoder_tokens, size=rng.integers(3, 16))
        target_text = np.concatenate(
            [
                [TARGET_START],
                rng.integers(3, num_decoder_tokens, size=rng.integers(3, 29)),
                [TARGET_END],
            ]
        )
        for t, char in enumerate(input_text):
            encoder_input_data[i, t, char] = 1.0
        encoder_input_data[i, t + 1 :, INPUT_SPACE] = 1.0
        for t, char in enumerate(target_text):
            # decoder_target_data is ahead of decoder_input_data by one timestep
            decoder_input_data[i, t, char] = 1.0
            if t > 0:
                # decoder_target_data will be ahead by one timestep
                # and will not include the start character.
                decoder_target_data[i, t - 1, char] = 1.0
        decoder_input_data[i, t + 1 :, TARGET_SPACE] = 1.0
        decoder_target_data[i, t:, TARGET_SPACE] = 1.0
    return [encoder_input_data, decoder_input_data], decoder_target_data


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
