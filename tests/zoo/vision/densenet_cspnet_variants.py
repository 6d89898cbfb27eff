# keras-io: examples/vision/densenet_cspnet_variants.py
"""The DenseNet variant (the one the example trains) on synthetic CIFAR-10-shaped data
with one-hot labels; each dense block repeats 2 times instead of 10."""

import keras
import numpy as np
from keras import activations as act
from keras.callbacks import LearningRateScheduler
from keras.layers import (
    AveragePooling2D,
    BatchNormalization,
    Concatenate,
    Conv2D,
    Dropout,
    Flatten,
    GlobalAveragePooling2D,
    Input,
    MaxPool2D,
    Reshape,
)
from keras.losses import CategoricalCrossentropy
from keras.models import Model
from keras.optimizers import Adam

IMAGE_SHAPE = (32, 32, 3)
TIMES = 2
lr = 0.01
num_clas = 10


def mish(x):
    x = x * (act.tanh(act.softplus(x)))
    return x


def conv_block(inps, convs):
    x = inps
    for conv in convs:
        x = Conv2D(
            conv["filter"],
            conv["kernel"],
            conv["strides"],
            conv["padding"],
            name="conv_" + str(conv["layer_ids"]),
        )(x)
        x = mish(x)
    return x


def nin_block(inps, filter, ker):
    x = inps
    x = Conv2D(filter, ker, padding="same", name="nin_" + str(0))(x)
    x = mish(x)
    x = Conv2D(filter, 1, padding="same", name="nin_" + str(1))(x)
    x = mish(x)
    x = Conv2D(filter, 1, padding="same", name="nin_" + str(2))(x)
    x = mish(x)
    return x


def dense_block(inps, filter, times, id):
    for _time in range(0, times):
        part1 = inps
        part2 = part1
        part2 = Conv2D(filter[0], 1, padding="same")(part2)
        part2 = mish(part2)
        part2 = Conv2D(filter[1], 3, padding="same")(part2)
        part2 = mish(part2)
        inps = Concatenate()([part1, part2])
    return inps


def densenet():
    shp = (None, *IMAGE_SHAPE)
    input_image = Input(shape=(shp[1], shp[2], shp[3]))
    # Layer 0 => 1
    x = conv_block(
        input_image,
        [{"filter": 32, "kernel": 7, "padding": "same", "strides": 2, "layer_ids": 0}],
    )
    x = MaxPool2D(pool_size=(2, 2), strides=(2, 2))(x)

    # Dense block 1
    x = dense_block(x, [32, 32], TIMES, "dense_block1_")
    x = Dropout(0.5)(x)
    x = BatchNormalization()(x)

    x = conv_block(
        x,
        [{"filter": 32, "kernel": 1, "strides": 1, "padding": "same", "layer_ids": 2}],
    )
    x = AveragePooling2D(pool_size=(2, 2), strides=(2, 2))(x)

    # dense block 2
    x = dense_block(x, [32, 32], TIMES, "dense_block2_")
    x = Dropout(0.5)(x)
    x = BatchNormalization()(x)

    x = conv_block(
        x,
        [{"filter": 32, "kernel": 1, "strides": 1, "padding": "same", "layer_ids": 3}],
    )
    x = AveragePooling2D(pool_size=(2, 2), strides=2)(x)

    # dense block 3
    x = dense_block(x, [32, 32], TIMES, "dense_block3_")
    x = Dropout(0.5)(x)
    x = BatchNormalization()(x)

    x = conv_block(
        x,
        [{"filter": 32, "kernel": 1, "strides": 1, "padding": "same", "layer_ids": 4}],
    )
    x = AveragePooling2D(pool_size=(2, 2), strides=2)(x)

    # nin block
    x = nin_block(x, num_clas, 3)
    x = GlobalAveragePooling2D()(x)
    x = Reshape((1, 1, num_clas))(x)
    x = Flatten()(x)
    x = Model(inputs=input_image, outputs=x)
    return x


def lr_scheduler(epoch, lr):
    if epoch == 11:
        lr = 0.001
    return lr


def callbacks():
    return [LearningRateScheduler(lr_scheduler)]


def build_model():
    optimizer = Adam(learning_rate=lr)
    loss = CategoricalCrossentropy(from_logits=True)
    model = densenet()
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, (n, *IMAGE_SHAPE)).astype("float32") / 255.0
        y = keras.utils.to_categorical(rng.integers(0, num_clas, (n, 1)), num_clas)
        return x, y.astype("float32")

    return split(128), split(64)
