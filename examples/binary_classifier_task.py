"""A binary classifier on imbalanced data, written as any Keras user writes one.

  python -m tf_mgpu.main --task=examples/binary_classifier_task.py --strategy=mirrored \
      --num_cpu_devices=2 --batch_size=32 --epochs=2 --model_dir=/tmp/binary

Class weights (as Keras's guide to imbalanced classification does: `CLASS_WEIGHT`),
a per-example sample weight (the third array of each split), and AUC, Precision and
Recall, which tf_mgpu computes over the whole split whatever the number of replicas.
The data comes from a fixed random teacher, so it needs no download.
"""

import keras
import numpy as np

CLASS_WEIGHT = {0: 1.0, 1: 4.0}  # about 1 positive in 5


def build_model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="binary_crossentropy",
        metrics=["auc", keras.metrics.Precision(name="precision"), "recall"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=16) > 1.0).astype("float32")
    trust = rng.uniform(0.5, 1.5, size=1280).astype("float32")  # a per-example weight
    return (x[:1024], y[:1024], trust[:1024]), (x[1024:], y[1024:], trust[1024:])
