"""A KerasHub ResNet image classifier (batch normalization), written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/hub_image_classifier_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=16 --epochs=1 --model_dir=/tmp/hub_image

`ResNetImageClassifier` over a tiny `ResNetBackbone` built from its config (no preset
download): one stack of one basic block, each convolution followed by BatchNormalization,
not synchronized, so each replica normalises its own share of the batch (`--sync_batch_norm`
normalises the global batch). The 32x32 RGB images are noise with one colour channel
brighter: that channel is the class.
"""

import keras
import keras_hub
import numpy as np

CLASSES = 3
SIZE = 32


def build_model():
    backbone = keras_hub.models.ResNetBackbone(
        input_conv_filters=[64],
        input_conv_kernel_sizes=[3],
        stackwise_num_filters=[64],  # the backbone requires 64 first
        stackwise_num_blocks=[1],
        stackwise_num_strides=[1],
        block_type="basic_block",
        image_shape=(SIZE, SIZE, 3),
    )
    model = keras_hub.models.ResNetImageClassifier(backbone, num_classes=CLASSES)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def images(count: int, rng):
    labels = rng.integers(0, CLASSES, count)
    x = rng.uniform(0.0, 0.6, (count, SIZE, SIZE, 3))
    x[np.arange(count), :, :, labels] += 0.4
    return x.astype("float32"), labels.astype("int32")


def load_data():
    rng = np.random.default_rng(0)
    return images(128, rng), images(64, rng)
