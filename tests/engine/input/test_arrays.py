"""Arrays read by index from host memory: the resident path's batches and order, resumed
by arithmetic, rows checked as read; and a task of np.memmap arrays trained by index on 2
replicas as on one device (and as resident)."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tests.keras.helpers import FLOAT64, assert_same_weights, load
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.engine.input import arrays, data, source
from tf_mgpu.errors import UserError


def split(n: int = 50) -> data.Split:
    """Example i is x = [i, i] (float32), y = i % 3."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1)
    return data.Split(x, np.arange(n) % 3)


def batches(src, pipelines: int, replicas: int, **resume) -> list[list[int]]:
    """Each step's global batch of example indices, its replicas' batches joined in
    replica order, at 4 examples per replica."""
    got, here = {}, replicas // pipelines
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, replicas)
        dataset = src.train_dataset(4 * replicas, 7, 2, context, **resume)
        for k, (x, _) in enumerate(dataset.as_numpy_iterator()):
            got.setdefault((pipeline, k % here), []).append(x[:, 0].astype(int).tolist())
    keys = sorted(got)
    return [[i for key in keys for i in got[key][k]] for k in range(len(got[keys[0]]))]


def test_replicas_on_workers_take_the_resident_paths_batches_in_its_order():
    src = arrays.ArraySource.of(split(), "task t", "train")
    steps = 50 // 8
    resident = [
        data.epoch_order(50, 7, epoch).numpy()[k * 8 : (k + 1) * 8].tolist()
        for epoch in range(2)
        for k in range(steps)
    ]
    for pipelines, replicas in [(1, 2), (2, 2)]:
        assert batches(src, pipelines, replicas) == resident, (pipelines, replicas)
    # Replica r takes the r-th run of the global batch, as loop.ResidentTrain gathers it.
    context = tf.distribute.InputContext(2, 1, 2)
    first = next(src.train_dataset(8, 7, 1, context).as_numpy_iterator())[0][:, 0]
    assert first.astype(int).tolist() == resident[0][4:]
    # Resumed at epoch 2, step 3: by arithmetic, the same batches from there.
    assert batches(src, 2, 2, first_epoch=1, first_step=3) == resident[steps + 3 :]


def test_a_nan_row_stops_the_read_with_one_line_naming_the_array_and_the_lowest_index():
    bad = split()
    bad.x[[31, 13], 1] = np.nan
    src = arrays.ArraySource.of(bad, "--task=t.py", "train")
    with pytest.raises(UserError) as raised, source.reraise(src):
        for _ in src.eval_dataset(8, tf.distribute.InputContext(1, 0, 1)).take(7):
            pass
    assert str(raised.value) == (
        "--task=t.py: x_train holds NaN or inf at example 13; clean or impute it in load_data()"
    )


def test_sparse_labels_outside_the_models_classes_are_caught_as_read():
    src = arrays.ArraySource.of(split(), "task t", "test")
    src.expect_classes(2)
    with pytest.raises(
        UserError, match="y_test holds label 2 at example 2, but the model outputs 2"
    ):
        src.read(np.array([4, 2, 5]))


def test_dict_inputs_and_sample_weights_are_gathered_by_row():
    x = {"b": np.arange(10, dtype=np.float32), "a": np.arange(10).reshape(10, 1)}
    src = arrays.ArraySource.of(data.Split(x, np.arange(10), np.full(10, 0.5)), "t", "train")
    got = src.take([7, 2])
    assert got.x["b"].tolist() == [7, 2]
    assert got.x["a"].tolist() == [[7], [2]]
    assert got.w.tolist() == [0.5, 0.5]
    assert src.weighted
    assert src.in_memory().x is x  # the tools get the arrays as given, not a copy


def test_memmap_arrays_train_by_index_on_two_replicas_like_one_device_and_resident(
    tmp_path, capsys
):
    task = load("memmap_arrays", FOLDER=str(tmp_path / "files"))
    config = dataclasses.replace(FLOAT64, epochs=2)
    one = training.run(dataclasses.replace(config, batch_size=32), task, strategy=cpu_strategy(1))
    two = training.run(config, task, strategy=cpu_strategy(2))
    starts = [line for line in capsys.readouterr().out.splitlines() if "tf_mgpu start" in line]
    assert len(starts) == 2
    assert all(
        " input=index (auto: x_train is memory-mapped (np.memmap), read by index, never whole) "
        in line
        for line in starts
    ), starts
    assert two.summary["config"]["input"] == "index"
    assert_same_weights(one, two, atol=1e-10)
    # Asked for, the same arrays resident (read whole) take the same steps.
    resident = training.run(
        dataclasses.replace(config, input="resident"), task, strategy=cpu_strategy(2)
    )
    assert_same_weights(resident, two, atol=1e-10)


def test_a_nan_row_of_a_memmap_met_in_training_is_one_line(tmp_path):
    task = load("memmap_arrays", FOLDER=str(tmp_path / "files"), NAN_AT=700)
    with pytest.raises(UserError, match="x_train holds NaN or inf at example 700"):
        training.run(dataclasses.replace(FLOAT64, epochs=1), task, strategy=cpu_strategy(2))
