# keras-io: examples/vision/sample_size_estimate.py
"""The example's first training stage (frozen MobileNetV2 base, new top) on synthetic
tf_flowers-shaped data (float32 images in 0-255, one-hot labels over 5 classes) in place
of the download; image side 224 -> 32; imagenet weights -> weights=None;
layers.experimental.preprocessing -> layers; the EarlyStopping callback kept (it monitors
val_auc, as the example's fit has validation_split=0.1).
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from tensorflow.keras import layers

num_classes = 5
image_size = (32, 32)


def build_model(num_classes=num_classes, img_size=image_size[0], top_dropout=0.3):
    # Create input and pre-processing layers for MobileNetV2
    inputs = layers.Input(shape=(img_size, img_size, 3))
    x = layers.Rescaling(scale=1.0 / 127.5, offset=-1)(inputs)
    model = keras.applications.MobileNetV2(include_top=False, weights=None, input_tensor=x)

    # Freeze the pretrained weights
    model.trainable = False

    # Rebuild top
    x = layers.GlobalAveragePooling2D(name="avg_pool")(model.output)
    x = layers.Dropout(top_dropout)(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    model = keras.Model(inputs, outputs)

    model.compile(
        loss="categorical_crossentropy",
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.AUC(name="auc"), "acc"],
    )
    return model


def callbacks():
    stopper = keras.callbacks.EarlyStopping(
        monitor="val_auc",
        mode="max",
        min_delta=0,
        patience=3,
        verbose=1,
        restore_best_weights=True,
    )
    return [stopper]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 255, size=(n, *image_size, 3)).astype("float32")
        labels = np.eye(num_classes, dtype="float32")[rng.integers(0, num_classes, n)]
        return images, labels

    train, test = split(128), split(64)
    return train, split(32), test
