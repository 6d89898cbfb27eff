# keras-io: examples/vision/googleNet.py
"""GoogLeNet on synthetic Intel-Image-Classification-shaped data: 32x32 images in [0, 1]
instead of 224x224, one-hot float32 labels over 6 classes; every filter count divided by 8
and the final AveragePooling2D pool size scaled with the image (1 instead of 7).
RMSprop(lr=1e-4) is written RMSprop(learning_rate=1e-4), since Keras 3 refuses `lr`.
Of the example's callbacks only ReduceLROnPlateau changes training; the checkpoint and
CSV logger write files and are dropped.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers, models

IMAGE_SIZE = 32
CLASS_NUM = 6  # data contains total 6 labels
W = 8  # every filter count is divided by W


def inception(_input, filters):
    """
    3a, 3b, 4a, 4b, 4c, 4d, 5a, 5b are inception layers
    Note:
    1. All inception layer should have strides of 1
    2. Same Padding
    3. Depth of 2 i.e., Stack two Conv2D layers
    """
    layer1 = layers.Conv2D(filters[0], (1, 1), strides=1, padding="same", activation="relu")(_input)

    # In order to avoid patchalignment issues, current incarnations of the Inception
    # architecture are restricted to filter sizes: 1x1, 3x3 and 5x5

    layer2 = layers.Conv2D(filters[1][0], (1, 1), strides=1, padding="same", activation="relu")(
        _input
    )
    layer2 = layers.Conv2D(filters[1][1], (3, 3), strides=1, padding="same", activation="relu")(
        layer2
    )

    layer3 = layers.Conv2D(filters[2][0], (1, 1), strides=1, padding="same", activation="relu")(
        _input
    )
    layer3 = layers.Conv2D(filters[2][1], (5, 5), strides=1, padding="same", activation="relu")(
        layer3
    )

    layer4 = layers.MaxPooling2D((3, 3), strides=1, padding="same")(_input)
    layer4 = layers.Conv2D(filters[3], (1, 1), strides=1, padding="same", activation="relu")(layer4)

    return layers.Concatenate(axis=-1)([layer1, layer2, layer3, layer4])


def f(filters):
    """Divides a filter spec of the example by W."""
    return [
        tuple(n // W for n in item) if isinstance(item, tuple) else item // W for item in filters
    ]


def GoogleNet():  # noqa: N802 (the example's name)
    input_layer = layers.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3))

    layer = layers.Conv2D(
        filters=64 // W, kernel_size=(7, 7), strides=2, padding="same", activation="relu"
    )(input_layer)
    layer = layers.MaxPooling2D(pool_size=(3, 3), strides=2, padding="same")(layer)
    layer = layers.BatchNormalization()(layer)

    layer = layers.Conv2D(
        filters=64 // W, kernel_size=(1, 1), strides=1, padding="same", activation="relu"
    )(layer)
    layer = layers.Conv2D(
        filters=192 // W, kernel_size=(3, 3), strides=1, padding="same", activation="relu"
    )(layer)
    layer = layers.BatchNormalization()(layer)
    layer = layers.MaxPooling2D(pool_size=(3, 3), strides=2, padding="same")(layer)

    layer = inception(layer, f([64, (96, 128), (16, 32), 32]))  # 3a
    layer = inception(layer, f([128, (128, 192), (32, 96), 64]))  # 3b
    layer = layers.MaxPooling2D(pool_size=(3, 3), strides=2, padding="same")(layer)

    layer = inception(layer, f([192, (96, 208), (16, 48), 64]))  # 4a
    layer = inception(layer, f([160, (112, 224), (24, 64), 64]))  # 4b
    layer = inception(layer, f([128, (128, 256), (24, 64), 64]))  # 4c
    layer = inception(layer, f([112, (144, 288), (32, 64), 64]))  # 4d
    layer = inception(layer, f([256, (160, 320), (32, 128), 128]))  # 4e
    layer = layers.MaxPooling2D(pool_size=(3, 3), strides=2, padding="same")(layer)

    layer = inception(layer, f([256, (160, 320), (32, 128), 128]))  # 5a
    layer = inception(layer, f([384, (192, 384), (48, 128), 128]))  # 5b
    # after 5th inception layers; apply Average Pooling with (7,7)/1 (here (1,1)/1)
    pool = IMAGE_SIZE // 32
    layer = layers.AveragePooling2D(pool_size=(pool, pool), strides=1, padding="valid")(layer)
    # averagepooling is the only layer with valid padding

    layer = layers.Flatten()(layer)
    layer = layers.Dropout(0.4)(layer)
    layer = layers.Dense(units=256 // W, activation="linear")(layer)
    output = layers.Dense(units=CLASS_NUM, activation="softmax")(layer)

    model = models.Model(inputs=input_layer, outputs=output)

    return model


def build_model():
    model = GoogleNet()
    model.compile(
        loss="categorical_crossentropy",
        optimizer=keras.optimizers.RMSprop(learning_rate=1e-4),
        metrics=["acc"],
    )
    return model


def callbacks():
    reduce_lr = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.2, patience=6, verbose=1, min_delta=0.0001
    )
    return [reduce_lr]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, (n, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32")
        x = x * (1.0 / 255)
        y = np.eye(CLASS_NUM, dtype="float32")[rng.integers(0, CLASS_NUM, n)]
        return x, y

    train, test = split(128), split(64)
    return train, split(32), test
