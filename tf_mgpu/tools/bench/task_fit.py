"""The reference any task is measured against: Keras `model.fit` then `evaluate`, as a user
of that task would write it (`bench --task=...`, variant keras_fit_task).

No strategy (one device, what a single-machine Keras user runs), the model
as the task compiles it, NumPy arrays straight into `fit` with Keras's
shuffling, `--batch_size`-equal batch 64, Keras's own choice of XLA (none on
CPU). The task's `preprocess` runs once on the host, as a Keras user would.
"""

import math
import time

import numpy as np

from tf_mgpu.config import Config
from tf_mgpu.tools.bench import baselines


def keras_fit_task(
    task: str,
    data_dir: str | None,
    manual_dir: str,
    epochs: int,
    train_split: str = "train",
    test_split: str = "test",
) -> dict:
    import keras
    import tensorflow as tf

    from tf_mgpu.tasks import adapter

    record = adapter.load(task)
    config = Config(
        task=task,
        data_dir=data_dir,
        manual_dir=manual_dir,
        train_split=train_split,
        test_split=test_split,
    )
    datasets = record.load_data(config)
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(config.dtype)  # as tf_mgpu builds it: float32
    net = record.build_model()

    def host(x):  # the task's preprocess (identity unless it defines one), on the host
        return tf.nest.map_structure(np.asarray, record.preprocess(x))

    timer = baselines.epoch_timer()
    started = time.perf_counter()
    x_train = host(datasets.train.x)
    net.fit(
        x_train,
        datasets.train.y,
        batch_size=baselines.BATCH_SIZE,
        epochs=epochs,
        shuffle=True,
        callbacks=[timer],
        verbose=0,
    )
    timer.seconds[0] += time.perf_counter() - started - sum(timer.seconds)  # setup counts once
    scores = net.evaluate(
        host(datasets.test.x), datasets.test.y, batch_size=256, return_dict=True, verbose=0
    )
    accuracy = scores.get("accuracy", scores.get("acc", math.nan))
    return baselines.result(timer.seconds, len(datasets.train), float(accuracy))
