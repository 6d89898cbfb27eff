# keras-io: examples/vision/wavelet_cnn.py
"""Wavelet CNN for texture classification on KTH-TIPS: synthetic float32 32x32x3 images in [0,
1] (as the example's generators rescale them) with one-hot labels over 10 classes in place
of the download (224x224, read through ImageDataGenerator.flow_from_directory), without the
training generator's rotation, zoom and flip (Keras 3 keeps ImageDataGenerator only as
keras._legacy, and its rotation needs scipy, not installed); the Wavelet_output_shape sizes
written for 32x32 inputs (16, 8, 4, 2 in place of the example's 100, 50, 25, 13); Conv2D
widths 64, 128, 256, 512 and Dense 1024 cut to 8, 16, 32, 64 and 64; keras.ops.transpose,
keras.ops.stack and keras.ops.abs in place of the tf.keras backend functions
permute_dimensions, stack and abs (Keras 3's keras.backend has none of them); the example's
first compile (loss '') kept before its second; the EarlyStopping callback kept, the
checkpoint callback (it writes a file) and the plots left out.
A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
from keras import layers, models
from keras import ops as backend

BATCH_SIZE = 16
NUM_CLASSES = 10
INPUT_SHAPE = (32, 32, 3)
CLASS_MODE = "categorical"


# create batch operations for Wavelet transform through Y axis
def WaveletTransformAxisY(batch):  # noqa: N802 (as in the example)
    odd = batch[:, 0::2]
    even = batch[:, 1::2]
    lpf = (odd + even) / 2.0
    hpf = backend.abs(odd - even)
    return lpf, hpf


# create batch operations for Wavelet transform through X axis
def WaveletTransformAxisX(batch):  # noqa: N802 (as in the example)
    net = backend.transpose(batch, [0, 2, 1])[:, :, ::-1]
    lpf, hpf = WaveletTransformAxisY(net)
    k_l = backend.transpose(lpf, [0, 2, 1])[:, ::-1, ...]
    k_h = backend.transpose(hpf, [0, 2, 1])[:, ::-1, ...]
    return k_l, k_h


def Wavelet(batch):  # noqa: N802 (as in the example)
    # define the image channels = RGB
    batch_image = backend.transpose(batch, [0, 3, 1, 2])
    r = batch_image[:, 0]
    g = batch_image[:, 1]
    b = batch_image[:, 2]

    # wavelet division- 1
    # red channel
    wavelet_low_pass1, wavelet_high_pass1 = WaveletTransformAxisY(r)
    red_wavelet_low_low, red_wavelet_low_high = WaveletTransformAxisX(wavelet_low_pass1)
    red_wavelet_high_low, red_wavelet_high_high = WaveletTransformAxisX(wavelet_high_pass1)

    # green channel
    wavelet_low_pass1, wavelet_high_pass1 = WaveletTransformAxisY(g)
    green_wavelet_low_low, green_wavelet_low_high = WaveletTransformAxisX(wavelet_low_pass1)
    green_wavelet_high_low, green_wavelet_high_high = WaveletTransformAxisX(wavelet_high_pass1)

    # blue channel
    wavelet_low_pass1, wavelet_high_pass1 = WaveletTransformAxisY(b)
    blue_wavelet_low_low, blue_wavelet_low_high = WaveletTransformAxisX(wavelet_low_pass1)
    blue_wavelet_high_low, blue_wavelet_high_high = WaveletTransformAxisX(wavelet_high_pass1)

    division1 = [
        red_wavelet_low_low,
        red_wavelet_low_high,
        red_wavelet_high_low,
        red_wavelet_high_high,
        green_wavelet_low_low,
        green_wavelet_low_high,
        green_wavelet_high_low,
        green_wavelet_high_high,
        blue_wavelet_low_low,
        blue_wavelet_low_high,
        blue_wavelet_high_low,
        blue_wavelet_high_high,
    ]

    wavelet1 = backend.stack(division1, axis=1)

    # wavelet divison -2
    wavelet_low_pass2, wavelet_high_pass2 = WaveletTransformAxisY(red_wavelet_low_low)
    red_wavelet_low_low2, red_wavelet_low_high2 = WaveletTransformAxisX(wavelet_low_pass2)
    red_wavelet_high_low2, red_wavelet_high_high2 = WaveletTransformAxisX(wavelet_high_pass2)

    wavelet_low_pass2, wavelet_high_pass2 = WaveletTransformAxisY(green_wavelet_low_low)
    green_wavelet_low_low2, green_wavelet_low_high2 = WaveletTransformAxisX(wavelet_low_pass2)
    green_wavelet_high_low2, green_wavelet_high_high2 = WaveletTransformAxisX(wavelet_high_pass2)

    wavelet_low_pass2, wavelet_high_pass2 = WaveletTransformAxisY(blue_wavelet_low_low)
    blue_wavelet_low_low2, blue_wavelet_low_high2 = WaveletTransformAxisX(wavelet_low_pass2)
    blue_wavelet_high_low2, blue_wavelet_high_high2 = WaveletTransformAxisX(wavelet_high_pass2)

    division2 = [
        red_wavelet_low_low2,
        red_wavelet_low_high2,
        red_wavelet_high_low2,
        red_wavelet_high_high2,
        green_wavelet_low_low2,
        green_wavelet_low_high2,
        green_wavelet_high_low2,
        green_wavelet_high_high2,
        blue_wavelet_low_low2,
        blue_wavelet_low_high2,
        blue_wavelet_high_low2,
        blue_wavelet_high_high2,
    ]
    wavelet2 = backend.stack(division2, axis=1)

    # wavelet divison -3
    wavelet_low_pass3, wavelet_high_pass3 = WaveletTransformAxisY(red_wavelet_low_low2)
    red_wavelet_low_low3, red_wavelet_low_high3 = WaveletTransformAxisX(wavelet_low_pass3)
    red_wavelet_high_low3, red_wavelet_high_high3 = WaveletTransformAxisX(wavelet_high_pass3)

    wavelet_low_pass3, wavelet_high_pass3 = WaveletTransformAxisY(green_wavelet_low_low2)
    green_wavelet_low_low3, green_wavelet_low_high3 = WaveletTransformAxisX(wavelet_low_pass3)
    green_wavelet_high_loss3, green_wavelet_high_high3 = WaveletTransformAxisX(wavelet_high_pass3)

    wavelet_low_pass3, wavelet_high_pass3 = WaveletTransformAxisY(blue_wavelet_low_low2)
    blue_wavelet_ll3, blue_wavelet_lh3 = WaveletTransformAxisX(wavelet_low_pass3)
    blue_wavelet_hl3, blue_wavelet_hh3 = WaveletTransformAxisX(wavelet_high_pass3)

    division3 = [
        red_wavelet_low_low3,
        red_wavelet_low_high3,
        red_wavelet_high_low3,
        red_wavelet_high_high3,
        green_wavelet_low_low3,
        green_wavelet_low_high3,
        green_wavelet_high_loss3,
        green_wavelet_high_high3,
        blue_wavelet_ll3,
        blue_wavelet_lh3,
        blue_wavelet_hl3,
        blue_wavelet_hh3,
    ]
    wavelet3 = backend.stack(division3, axis=1)

    # wavelet divison -4
    wavelet_low_pass4, wavelet_high_pass4 = WaveletTransformAxisY(red_wavelet_low_low3)
    red_wavelet_ll4, red_wavelet_lh4 = WaveletTransformAxisX(wavelet_low_pass4)
    red_wavelet_hl4, red_wavelet_hh4 = WaveletTransformAxisX(wavelet_high_pass4)

    wavelet_low_pass4, wavelet_high_pass4 = WaveletTransformAxisY(green_wavelet_low_low3)
    green_wavelet_ll4, green_wavelet_lh4 = WaveletTransformAxisX(wavelet_low_pass4)
    green_wavelet_hl4, green_wavelet_hh4 = WaveletTransformAxisX(wavelet_high_pass4)

    wavelet_low_pass4, wavelet_high_pass4 = WaveletTransformAxisY(blue_wavelet_ll3)
    blue_wavelet_ll4, blue_wavelet_lh4 = WaveletTransformAxisX(wavelet_low_pass4)
    blue_wavelet_hl4, blue_wavelet_hh4 = WaveletTransformAxisX(wavelet_high_pass4)

    division4 = [
        red_wavelet_ll4,
        red_wavelet_lh4,
        red_wavelet_hl4,
        red_wavelet_hh4,
        green_wavelet_ll4,
        green_wavelet_lh4,
        green_wavelet_hl4,
        green_wavelet_hh4,
        blue_wavelet_ll4,
        blue_wavelet_lh4,
        blue_wavelet_hl4,
        blue_wavelet_hh4,
    ]
    wavelet4 = backend.stack(division4, axis=1)

    k_1 = backend.transpose(wavelet1, [0, 2, 3, 1])
    k_2 = backend.transpose(wavelet2, [0, 2, 3, 1])
    k_3 = backend.transpose(wavelet3, [0, 2, 3, 1])
    k_4 = backend.transpose(wavelet4, [0, 2, 3, 1])

    return [k_1, k_2, k_3, k_4]


def Wavelet_output_shape(input_shape):  # noqa: N802 (as in the example)
    return [
        tuple([None, 16, 16, 12]),
        tuple([None, 8, 8, 12]),
        tuple([None, 4, 4, 12]),
        tuple([None, 2, 2, 12]),
    ]


def build_model():
    input_layer = keras.Input(INPUT_SHAPE)

    wavelet = layers.Lambda(Wavelet, Wavelet_output_shape)
    input1, input2, input3, input4 = wavelet(input_layer)

    # level 1 intput
    conv_1 = layers.Conv2D(8, 3, padding="same", activation="relu")(input1)
    norm_1 = layers.BatchNormalization()(conv_1)

    conv_1_2 = layers.Conv2D(8, 3, strides=(2, 2), padding="same", activation="relu")(norm_1)
    norm_1_2 = layers.BatchNormalization()(conv_1_2)

    # level 2 input
    conv_2 = layers.Conv2D(8, 3, padding="same", activation="relu")(input2)
    norm_2 = layers.BatchNormalization()(conv_2)

    concat_1 = layers.concatenate([norm_1_2, norm_2])

    conv_2_1 = layers.Conv2D(16, 3, padding="same", activation="relu")(concat_1)
    norm_2_1 = layers.BatchNormalization()(conv_2_1)

    conv_2_2 = layers.Conv2D(16, 3, strides=(2, 2), padding="same", activation="relu")(norm_2_1)
    norm_2_2 = layers.BatchNormalization()(conv_2_2)

    # level 3 input
    conv_3 = layers.Conv2D(8, 3, padding="same", activation="relu")(input3)
    norm_3 = layers.BatchNormalization()(conv_3)

    concat_2 = layers.concatenate([norm_2_2, norm_3])

    conv_3_1 = layers.Conv2D(32, 3, padding="same", activation="relu")(concat_2)
    norm_3_1 = layers.BatchNormalization()(conv_3_1)

    conv_3_2 = layers.Conv2D(32, 3, strides=(2, 2), padding="same", activation="relu")(norm_3_1)
    norm_3_2 = layers.BatchNormalization()(conv_3_2)

    # level 4 input
    conv_4 = layers.Conv2D(8, 3, padding="same", activation="relu")(input4)
    norm_4 = layers.BatchNormalization()(conv_4)

    concat_3 = layers.concatenate([norm_3_2, norm_4])

    conv_4_1 = layers.Conv2D(64, 3, padding="same", activation="relu")(concat_3)  # noqa: F841
    norm_4_1 = layers.BatchNormalization()(conv_4)

    conv_4_2 = layers.Conv2D(64, 3, strides=(2, 2), padding="same", activation="relu")(norm_4_1)
    norm_4_2 = layers.BatchNormalization()(conv_4_2)

    pool = layers.AveragePooling2D(5, padding="same")(norm_4_2)
    flatten = layers.Flatten()(pool)

    fc = layers.Dense(64, activation="relu")(flatten)
    norm_5 = layers.BatchNormalization()(fc)
    drop = layers.Dropout(0.5)(norm_5)

    output_layer = layers.Dense(NUM_CLASSES, activation="softmax")(drop)

    model = models.Model(inputs=input_layer, outputs=output_layer)

    initial_learning_rate = 0.0001
    # setup
    lr_schedule = keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate, decay_steps=100000, decay_rate=0.96, staircase=True
    )

    model.compile(optimizer="adam", loss="", metrics=["acc"])
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=lr_schedule),
        loss="categorical_crossentropy",
        metrics=["acc"],
    )
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(monitor="val_acc", patience=15)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.integers(0, 256, size=(n, *INPUT_SHAPE)).astype("float32") / 255.0
        labels = keras.utils.to_categorical(rng.integers(0, NUM_CLASSES, size=n), NUM_CLASSES)
        return images, labels

    train, test = split(128), split(64)
    return train, split(32), test
