# keras-io: examples/vision/video_classification.py
"""The CNN-RNN video classifier's sequence model (GRUs over frame features with a frame
mask) on UCF101 top-5: synthetic float32 frame features and bool masks (a random number
of leading frames unmasked per video, as zero padding leaves them) with string tags of the
five UCF101 top-5 classes turned into int64 labels of shape (n, 1) by the example's own
StringLookup, in place of the videos and the ImageNet InceptionV3 feature extractor
(inference only there); NUM_FEATURES 64 in place of 2048 (MAX_SEQ_LENGTH 20 as written);
validation_split and the checkpoint callback (it writes a file) left out."""

import keras
import numpy as np

MAX_SEQ_LENGTH = 20
NUM_FEATURES = 64

TAGS = ["CricketShot", "PlayingCello", "Punch", "ShavingBeard", "TennisSwing"]

label_processor = keras.layers.StringLookup(num_oov_indices=0, vocabulary=np.unique(TAGS))


# Utility for our sequence model.
def get_sequence_model():
    class_vocab = label_processor.get_vocabulary()

    frame_features_input = keras.Input((MAX_SEQ_LENGTH, NUM_FEATURES))
    mask_input = keras.Input((MAX_SEQ_LENGTH,), dtype="bool")

    # Refer to the following tutorial to understand the significance of using `mask`:
    # https://keras.io/api/layers/recurrent_layers/gru/
    x = keras.layers.GRU(16, return_sequences=True)(frame_features_input, mask=mask_input)
    x = keras.layers.GRU(8)(x)
    x = keras.layers.Dropout(0.4)(x)
    x = keras.layers.Dense(8, activation="relu")(x)
    output = keras.layers.Dense(len(class_vocab), activation="softmax")(x)

    rnn_model = keras.Model([frame_features_input, mask_input], output)

    rnn_model.compile(
        loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"]
    )
    return rnn_model


def build_model():
    return get_sequence_model()


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        lengths = rng.integers(1, MAX_SEQ_LENGTH + 1, size=n)
        frame_masks = np.arange(MAX_SEQ_LENGTH)[None, :] < lengths[:, None]
        frame_features = rng.normal(size=(n, MAX_SEQ_LENGTH, NUM_FEATURES)).astype("float32")
        frame_features *= frame_masks[..., None]
        labels = np.array(TAGS)[rng.integers(0, len(TAGS), size=n)]
        labels = keras.ops.convert_to_numpy(label_processor(labels[..., None]))
        return [frame_features, frame_masks], labels

    return split(128), split(64)
