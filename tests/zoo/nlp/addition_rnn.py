# keras-io: examples/nlp/addition_rnn.py
"""Adapted: 128 + 64 additions generated as the example generates them (from
np.random.default_rng, without its de-duplication) in place of its 50000."""

import keras
import numpy as np
from keras import layers

# Parameters for the model and dataset.
DIGITS = 3

# Maximum length of input is 'int + int' (e.g., '345+678'). Maximum length of
# int is DIGITS.
MAXLEN = DIGITS + 1 + DIGITS

# All the numbers, plus sign and space for padding.
chars = "0123456789+ "
num_layers = 1  # Try to add more LSTM layers!


def build_model():
    model = keras.Sequential()
    # "Encode" the input sequence using a LSTM, producing an output of size 128.
    # Note: In a situation where your input sequences have a variable length,
    # use input_shape=(None, num_feature).
    model.add(layers.LSTM(128, input_shape=(MAXLEN, len(chars))))
    # As the decoder RNN's input, repeatedly provide with the last output of
    # RNN for each time step. Repeat 'DIGITS + 1' times as that's the maximum
    # length of output, e.g., when DIGITS=3, max output is 999+999=1998.
    model.add(layers.RepeatVector(DIGITS + 1))
    # The decoder RNN could be multiple layers stacked or a single layer.
    for _ in range(num_layers):
        model.add(layers.LSTM(128, return_sequences=True))
    # Apply a dense layer to the every temporal slice of an input. For each of step
    # of the output sequence, decide which character should be chosen.
    model.add(layers.Dense(len(chars), activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def _split(rng, n):
    # The example's questions ("12+345" padded, reversed) and answers, one-hot as bool.
    index = {c: i for i, c in enumerate(sorted(set(chars)))}
    x = np.zeros((n, MAXLEN, len(chars)), dtype=bool)
    y = np.zeros((n, DIGITS + 1, len(chars)), dtype=bool)
    for i in range(n):
        a, b = (int(rng.integers(0, 10 ** int(rng.integers(1, DIGITS + 1)))) for _ in "ab")
        q = f"{a}+{b}"
        query = (q + " " * (MAXLEN - len(q)))[::-1]
        ans = str(a + b)
        ans += " " * (DIGITS + 1 - len(ans))
        for t, c in enumerate(query):
            x[i, t, index[c]] = True
        for t, c in enumerate(ans):
            y[i, t, index[c]] = True
    return x, y


def load_data():
    rng = np.random.default_rng(0)
    return _split(rng, 128), _split(rng, 64)
