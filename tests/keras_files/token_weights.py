"""A causal language model's data as KerasHub's CausalLM preprocessors give it: token ids,
the next tokens as labels, and one sample weight per token (0 after each sequence's end), a
rank-2 sample_weight that Keras's fit takes as it is."""

import keras
import numpy as np

VOCABULARY, LENGTH = 50, 12


def build_model():
    tokens = keras.Input((LENGTH,), dtype="int32")
    x = keras.layers.Embedding(VOCABULARY, 16)(tokens)
    x = keras.layers.Dense(16, activation="relu")(x)
    logits = keras.layers.Dense(VOCABULARY)(x)
    model = keras.Model(tokens, logits)
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCABULARY, size=(200, LENGTH + 1)).astype("int32")
    lengths = rng.integers(4, LENGTH + 1, size=200)
    weights = (np.arange(LENGTH)[None, :] < lengths[:, None]).astype("float32")
    x, y = ids[:, :-1] * (weights > 0), ids[:, 1:] * (weights > 0)
    return (x[:128], y[:128], weights[:128]), (x[128:], y[128:], weights[128:])
