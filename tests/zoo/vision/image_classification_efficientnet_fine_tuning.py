# keras-io: examples/vision/image_classification_efficientnet_fine_tuning.py
"""The transfer-learning model of the example (frozen EfficientNetB0 base, new
GlobalAveragePooling/BatchNormalization/Dropout/Dense top, Adam(1e-2)) with weights=None in
place of the ImageNet weights, on synthetic Stanford-Dogs-shaped data: 32x32 float images
in [0, 255] instead of 224x224, one-hot float32 labels over 120 classes. The example's
augmentation runs in its PyDataset, outside the model, so it is not part of the synthetic
data; the from-scratch run and the later unfreeze step are not part of the task."""

import keras
import numpy as np
from keras import layers
from keras.applications import EfficientNetB0

IMG_SIZE = 32
NUM_CLASSES = 120


def build_model(num_classes=NUM_CLASSES):
    inputs = layers.Input(shape=(IMG_SIZE, IMG_SIZE, 3))
    model = EfficientNetB0(include_top=False, input_tensor=inputs, weights=None)

    # Freeze the pretrained weights
    model.trainable = False

    # Rebuild top
    x = layers.GlobalAveragePooling2D(name="avg_pool")(model.output)
    x = layers.BatchNormalization()(x)

    top_dropout_rate = 0.2
    x = layers.Dropout(top_dropout_rate, name="top_dropout")(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="pred")(x)

    # Compile
    model = keras.Model(inputs, outputs, name="EfficientNet")
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)
    model.compile(optimizer=optimizer, loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 255, (n, IMG_SIZE, IMG_SIZE, 3)).astype("float32")
        labels = np.eye(NUM_CLASSES, dtype="float32")[rng.integers(0, NUM_CLASSES, n)]
        return images, labels

    return split(128), split(64)
