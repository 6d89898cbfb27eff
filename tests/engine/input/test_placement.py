"""--input=auto: arrays resident where they fit the budget, else read by index from host
memory; np.memmap arrays always by index; the reason said in one phrase."""

import numpy as np
import pytest
import tensorflow as tf

from tests.support import cpu_strategy
from tf_mgpu.engine.input import arrays, data, placement, stream
from tf_mgpu.errors import UserError


def small(rows: int = 100) -> data.Data:
    x = np.ones((rows, 10), np.float32)  # 4,000 bytes + 800 of labels
    y = np.zeros(rows, np.int64)
    return data.Data(data.Split(x, y), data.Split(x[:20], y[:20]))


def test_arrays_that_fit_stay_resident_and_the_reason_counts_each_replicas_copy(monkeypatch):
    monkeypatch.setenv(placement.BUDGET_ENV, "1M")
    chosen = placement.place("auto", cpu_strategy(2), small(), "task t")
    assert chosen.input == "resident"
    assert isinstance(chosen.datasets.train, data.Split)
    assert chosen.reason == (
        "auto: (train 4.8 kB + test 960 B) x 2 replicas fits in 1.0 MB, $TF_MGPU_RESIDENT_BUDGET"
    )


def test_arrays_over_the_budget_are_read_by_index_from_host_memory(monkeypatch):
    # 2 CPU replicas hold 2 copies: 11,520 bytes, over a budget that one copy fits.
    monkeypatch.setenv(placement.BUDGET_ENV, "8000")
    chosen = placement.place("auto", cpu_strategy(2), small(), "task t")
    assert chosen.input == "index"
    assert "x 2 replicas > 8.0 kB" in chosen.reason
    assert chosen.reason.endswith("read by index from host memory")
    assert all(
        isinstance(s, arrays.ArraySource) for s in (chosen.datasets.train, chosen.datasets.test)
    )
    assert placement.place("auto", cpu_strategy(1), small(), "task t").input == "resident"


def test_the_budget_is_half_of_each_gpus_memory_or_of_the_hosts(monkeypatch):
    monkeypatch.delenv(placement.BUDGET_ENV, raising=False)
    monkeypatch.setattr(placement, "_gpu_bytes", lambda: 16 * 2**30)
    assert placement.budget(gpus=True) == (8 * 2**30, "half of each GPU's 17 GB")
    monkeypatch.setattr(placement, "_gpu_bytes", lambda: None)
    assert placement.budget(gpus=True)[0] is None  # unknown: kept resident, as before
    host, said = placement.budget(gpus=False)
    assert host > 0
    assert said.startswith("half the host's")
    assert placement.parse_bytes("64M") == 64 * 2**20
    assert placement.parse_bytes("1.5G") == 3 * 2**29
    with pytest.raises(UserError, match="not a number of bytes"):
        placement.parse_bytes("lots")


def memmapped(tmp_path, x: np.ndarray) -> data.Data:
    np.save(tmp_path / "x.npy", x)
    mapped = np.asarray(np.load(tmp_path / "x.npy", mmap_mode="r"))  # as the adapter sees it
    y = np.zeros(len(x), np.int64)
    return data.Data(data.Split(mapped[:80], y[:80]), data.Split(mapped[80:], y[80:]))


def test_memmap_arrays_are_always_read_by_index_and_never_scanned_whole(tmp_path, monkeypatch):
    monkeypatch.setenv(placement.BUDGET_ENV, "1G")
    datasets = memmapped(tmp_path, np.ones((100, 3), np.float32))
    assert arrays.is_mapped(datasets.train.x)
    assert not arrays.is_mapped(np.ones(3))
    chosen = placement.place("auto", cpu_strategy(1), datasets, "task t")
    assert chosen.input == "index"
    assert chosen.reason == "auto: x_train is memory-mapped (np.memmap), read by index, never whole"


def test_asked_for_resident_a_memmap_is_read_whole_so_scanned_whole(tmp_path):
    x = np.ones((100, 3), np.float32)
    x[90, 1] = np.nan
    datasets = memmapped(tmp_path, x)
    with pytest.raises(UserError, match="x_test holds 1 non-finite values"):
        placement.place("resident", cpu_strategy(1), datasets, "task t")
    assert placement.place("index", cpu_strategy(1), datasets, "task t").input == "index"


def test_a_tf_data_split_streams_whatever_input_says():
    pairs = tf.data.Dataset.from_tensor_slices((np.ones((8, 2), np.float32), np.zeros(8)))
    split = stream.scan(pairs, "task t", "train")
    chosen = placement.place("index", cpu_strategy(1), data.Data(split, split), "task t")
    assert (chosen.input, chosen.reason) == ("stream", "load_data() returns a tf.data.Dataset")
