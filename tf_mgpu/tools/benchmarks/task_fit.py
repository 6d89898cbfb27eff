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
from tf_mgpu.engine.input import stream
from tf_mgpu.tools.benchmarks import reference_loop


def prepared(
    task: str, data_dir, manual_dir, train_split: str, test_split: str, dtype: str | None = None
):
    """(the task's record, its data as arrays, its compiled model, the host-side preprocess);
    `dtype`: a Keras dtype policy instead of the task's own."""
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
    datasets = stream.materialized(record.load_data(config))  # fit gets arrays
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(dtype or record.dtype)  # as tf_mgpu builds it
    net = record.build_model()

    def host(x):  # the task's preprocess (identity unless it defines one), on the host
        return tf.nest.map_structure(np.asarray, record.preprocess(x))

    return record, datasets, net, host


def _accuracy(net, host, test) -> float:
    scores = net.evaluate(host(test.x), test.y, batch_size=256, return_dict=True, verbose=0)
    return float(scores.get("accuracy", scores.get("acc", math.nan)))


def keras_fit_task(
    task: str,
    data_dir: str | None,
    manual_dir: str,
    epochs: int,
    train_split: str = "train",
    test_split: str = "test",
    dtype: str | None = None,
) -> dict:
    _, datasets, net, host = prepared(task, data_dir, manual_dir, train_split, test_split, dtype)
    timer = reference_loop.epoch_timer()
    started = time.perf_counter()
    x_train = host(datasets.train.x)
    net.fit(
        x_train,
        datasets.train.y,
        batch_size=reference_loop.BATCH_SIZE,
        epochs=epochs,
        shuffle=True,
        callbacks=[timer],
        verbose=0,
    )
    timer.seconds[0] += time.perf_counter() - started - sum(timer.seconds)  # setup counts once
    accuracy = _accuracy(net, host, datasets.test)
    return reference_loop.result(timer.seconds, len(datasets.train), accuracy)


def task_floor(
    task: str,
    data_dir: str | None,
    manual_dir: str,
    epochs: int,
    train_split: str = "train",
    test_split: str = "test",
) -> dict:
    """The task's model in the plainest loop (variant task_floor): one `tf.function` step per
    batch of 64 gathered from tensors in memory; no strategy, no XLA, no metrics, no checks.
    What any loop can reach with this model on this machine; not a product to use."""
    import keras
    import tensorflow as tf

    _, datasets, net, host = prepared(task, data_dir, manual_dir, train_split, test_split)
    started = time.perf_counter()
    x = tf.nest.map_structure(tf.constant, host(datasets.train.x))
    y = tf.constant(datasets.train.y)
    loss_fn = keras.losses.get(net.loss)  # a name, or the loss itself
    variables = net.trainable_variables

    @tf.function
    def step(rows):
        with tf.GradientTape() as tape:
            predicted = net(tf.nest.map_structure(lambda a: tf.gather(a, rows), x), training=True)
            loss = tf.reduce_mean(loss_fn(tf.gather(y, rows), predicted))
            loss += tf.add_n(net.losses) if net.losses else 0.0
        net.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    size, batch = len(datasets.train), reference_loop.BATCH_SIZE
    setup = time.perf_counter() - started
    seconds = []
    for epoch in range(epochs):
        began = time.perf_counter()
        order = np.random.default_rng(epoch).permutation(size)
        for first in range(0, size - batch + 1, batch):
            loss = step(tf.constant(order[first : first + batch]))
        float(loss)  # waits for the epoch's last step
        seconds.append(time.perf_counter() - began)
    seconds[0] += setup  # counted once, with the first epoch (as fit's)
    return reference_loop.result(seconds, len(datasets.train), _accuracy(net, host, datasets.test))
