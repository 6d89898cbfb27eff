"""The seed tutorial's model: MNIST, Flatten -> Dense 128 relu -> Dense 10, plain SGD at 0.01.

  python -m tf_mgpu.main                      # this task is the default
  python -m tf_mgpu.main --task=mnist_mlp --strategy=mirrored --num_cpu_devices=2

The images stay uint8 in memory (47 MB for the training split, one copy per
replica) and are scaled on the device, inside the compiled step. The export
takes uint8 images and returns class probabilities (see tasks/mnist/serving.py).
"""

import keras
import tensorflow as tf

from tf_mgpu.tasks.mnist import data, serving

# --scale_lr multiplies the rate by global batch / this: the seed recipe's batch.
REFERENCE_BATCH = 64


def build_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ],
        name="mnist_mlp",
    )
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data(config):
    mnist = data.load(config.data_dir, config.manual_dir, config.train_split, config.test_split)
    return (mnist.train.x, mnist.train.y), (mnist.test.x, mnist.test.y)


def preprocess(images: tf.Tensor) -> tf.Tensor:
    """uint8 pixels to float32 in [0, 1]."""
    return tf.cast(images, tf.float32) / 255.0


export = serving.save  # uint8 images in, probabilities out
