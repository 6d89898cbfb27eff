"""A text classifier on raw strings, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/text_classifier_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=32 --epochs=2 --model_dir=/tmp/text

TextVectorization sits inside the model, adapted in build_model, so model.keras and
saved_model/ take text and keep the vocabulary. The sentences are made up from a few
words, so nothing is downloaded.
"""

import keras
import numpy as np

WORDS = np.array(["good", "great", "fine", "bad", "awful", "poor", "the", "movie", "was"])


def sentences(count: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, count)
    text = []
    for label in labels:
        mood = WORDS[rng.integers(0, 3) + 3 * (1 - label)]
        filler = rng.choice(WORDS[6:], 3)
        text.append(" ".join([*filler[:2], mood, filler[2]]))
    return np.array(text), labels


def build_model():
    vectorize = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vectorize.adapt(sentences(500, seed=1)[0])
    text = keras.Input(shape=(), dtype="string")
    hidden = keras.layers.Embedding(20, 8)(vectorize(text))
    hidden = keras.layers.GlobalAveragePooling1D()(hidden)
    model = keras.Model(text, keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.compile(
        optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"]
    )
    return model


def load_data():
    return sentences(1024, seed=2), sentences(256, seed=3)
