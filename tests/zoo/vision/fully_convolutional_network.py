# keras-io: examples/vision/fully_convolutional_network.py
"""FCN-8S (the last and fullest of the three FCN models the example trains) on synthetic
Oxford-IIIT-Pets-shaped data: 32x32 VGG19-preprocessed images instead of 224x224, float
masks of shape (32, 32, 1) with values 1-3. VGG19 is built with weights=None and
include_top=False (include_top=True needs 224x224 inputs), so the copy of the pretrained
fc1/fc2 weights into the converted Dense->Conv2D layers is skipped; their units are 64
instead of 4096. The example's global mixed_float16 policy is set while the model is built
and compiled, then the previous global policy is restored."""

import keras
import numpy as np
import tensorflow as tf

NUM_CLASSES = 4
INPUT_HEIGHT = 32
INPUT_WIDTH = 32
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 1e-4
MIXED_PRECISION = True


def make_fcn8s():
    input_layer = keras.Input(shape=(INPUT_HEIGHT, INPUT_WIDTH, 3))

    # VGG Model backbone.
    vgg_model = keras.applications.vgg19.VGG19(
        include_top=False, weights=None, input_shape=(INPUT_HEIGHT, INPUT_WIDTH, 3)
    )

    # Extracting different outputs from same model
    fcn_backbone = keras.models.Model(
        inputs=vgg_model.layers[1].input,
        outputs=[
            vgg_model.get_layer(block_name).output
            for block_name in ["block3_pool", "block4_pool", "block5_pool"]
        ],
    )

    # Setting backbone to be non-trainable
    fcn_backbone.trainable = False

    x = fcn_backbone(input_layer)

    # Converting Dense layers to Conv2D layers
    units = [64, 64]
    dense_convs = []

    for filter_idx in range(len(units)):
        dense_conv = keras.layers.Conv2D(
            filters=units[filter_idx],
            kernel_size=(7, 7) if filter_idx == 0 else (1, 1),
            strides=(1, 1),
            activation="relu",
            padding="same",
            use_bias=False,
            kernel_initializer=tf.constant_initializer(1.0),
        )
        dense_convs.append(dense_conv)
        dropout_layer = keras.layers.Dropout(0.5)
        dense_convs.append(dropout_layer)

    dense_convs = keras.Sequential(dense_convs)
    dense_convs.trainable = False

    x[-1] = dense_convs(x[-1])

    pool3_output, pool4_output, pool5_output = x

    # FCN-32S head
    # 1x1 convolution to set channels = number of classes
    pool5 = keras.layers.Conv2D(
        filters=NUM_CLASSES,
        kernel_size=(1, 1),
        padding="same",
        strides=(1, 1),
        activation="relu",
    )

    final_fcn32s_pool = pool5(pool5_output)

    # FCN-16S
    # 1x1 convolution to set channels = number of classes
    # Followed from the original Caffe implementation
    pool4 = keras.layers.Conv2D(
        filters=NUM_CLASSES,
        kernel_size=(1, 1),
        padding="same",
        strides=(1, 1),
        activation="linear",
        kernel_initializer=keras.initializers.Zeros(),
    )(pool4_output)

    # Intermediate up-sample
    pool5 = keras.layers.UpSampling2D(
        size=(2, 2),
        data_format=keras.backend.image_data_format(),
        interpolation="bilinear",
    )(final_fcn32s_pool)

    # Add intermediate outputs
    final_fcn16s_pool = keras.layers.Add()([pool4, pool5])

    # FCN-8S
    # 1x1 convolution to set channels = number of classes
    # Followed from the original Caffe implementation
    pool3 = keras.layers.Conv2D(
        filters=NUM_CLASSES,
        kernel_size=(1, 1),
        padding="same",
        strides=(1, 1),
        activation="linear",
        kernel_initializer=keras.initializers.Zeros(),
    )(pool3_output)

    # Intermediate up-sample
    intermediate_pool_output = keras.layers.UpSampling2D(
        size=(2, 2),
        data_format=keras.backend.image_data_format(),
        interpolation="bilinear",
    )(final_fcn16s_pool)

    # Get Softmax outputs for all classes
    fcn8s_conv_layer = keras.layers.Conv2D(
        filters=NUM_CLASSES,
        kernel_size=(1, 1),
        activation="softmax",
        padding="same",
        strides=(1, 1),
    )

    # Up-sample to original image size
    fcn8s_upsample_layer = keras.layers.UpSampling2D(
        size=(8, 8),
        data_format=keras.backend.image_data_format(),
        interpolation="bilinear",
    )

    # Add intermediate outputs
    final_fcn8s_pool = keras.layers.Add()([pool3, intermediate_pool_output])
    final_fcn8s_output = fcn8s_conv_layer(final_fcn8s_pool)
    final_fcn8s_output = fcn8s_upsample_layer(final_fcn8s_output)

    return keras.models.Model(inputs=input_layer, outputs=final_fcn8s_output)


def build_model():
    previous = keras.mixed_precision.global_policy()
    # Mixed-precision setting
    if MIXED_PRECISION:
        policy = keras.mixed_precision.Policy("mixed_float16")
        keras.mixed_precision.set_global_policy(policy)
    try:
        fcn8s_model = make_fcn8s()

        fcn8s_optimizer = keras.optimizers.AdamW(
            learning_rate=LEARNING_RATE, weight_decay=WEIGHT_DECAY
        )

        fcn8s_loss = keras.losses.SparseCategoricalCrossentropy()

        # Maintain mIOU and Pixel-wise Accuracy as metrics
        fcn8s_model.compile(
            optimizer=fcn8s_optimizer,
            loss=fcn8s_loss,
            metrics=[
                keras.metrics.MeanIoU(num_classes=NUM_CLASSES, sparse_y_pred=False),
                keras.metrics.SparseCategoricalAccuracy(),
            ],
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return fcn8s_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        image = rng.uniform(0, 255, (n, INPUT_HEIGHT, INPUT_WIDTH, 3)).astype("float32")
        image = keras.applications.vgg19.preprocess_input(image)
        mask = rng.integers(1, NUM_CLASSES, (n, INPUT_HEIGHT, INPUT_WIDTH, 1))
        return image, mask.astype("float32")

    return split(128), split(64)
