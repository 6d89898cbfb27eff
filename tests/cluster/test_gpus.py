"""Each local worker its own GPUs, as torchrun's --nproc-per-node gives them, and an elastic
shrink without the lost worker's. GPUs are named through CUDA_VISIBLE_DEVICES (none here)."""

import pytest

from tests.cluster.test_launcher import launch, launcher_lines, starts
from tf_mgpu import errors
from tf_mgpu.cluster import gpus


def seen(tmp_path, rank: int) -> list[str | None]:
    """The GPUs worker `rank` was given, once per start."""
    return [start["env"].get(gpus.VISIBLE) for start in starts(tmp_path, rank)]


def test_each_of_three_workers_gets_its_own_equal_share(tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.VISIBLE, "0,1,2,3,4,5,6")
    code, _, err = launch(tmp_path, workers=3)
    assert code == 0, err
    assert [seen(tmp_path, rank) for rank in range(3)] == [["0,1"], ["2,3"], ["4,5"]]
    lines = launcher_lines(err)
    assert "tf_mgpu launch: 1 of 7 GPUs unused (6): each of 3 workers takes 2" in lines[1], err
    assert "worker:2 (pid " in lines[2], err
    assert ", GPUs 4,5)" in lines[2], err


def test_an_elastic_shrink_leaves_out_the_lost_workers_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.VISIBLE, "GPU-a,GPU-b,GPU-c")
    code, _, err = launch(
        tmp_path,
        "--fail=1:137",
        "--fail_starts=1",
        "--linger=0.2",
        workers=3,
        min_workers=2,
        max_restarts=1,
    )
    assert code == 0, err
    assert [seen(tmp_path, rank) for rank in range(3)] == [
        ["GPU-a", "GPU-a"],
        ["GPU-b", "GPU-c"],
        ["GPU-c"],
    ]
    assert "taken as lost with its GPUs GPU-b (--workers=2:3)" in err, err


def test_more_workers_than_gpus_start_nothing_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.VISIBLE, "0,1")
    code, _, err = launch(tmp_path, workers=3)
    assert code == errors.EXIT_USER_ERROR, err
    assert err.splitlines()[-1] == (
        "tf_mgpu: error: 3 workers cannot each have one of this machine's 2 GPUs "
        "(CUDA_VISIBLE_DEVICES=0,1): pass --workers=2 or fewer, or CUDA_VISIBLE_DEVICES= "
        "to train on the CPU"
    ), err
    assert not starts(tmp_path, 0)


def test_without_gpus_the_workers_environment_is_left_as_it_was(tmp_path, monkeypatch):
    monkeypatch.delenv(gpus.VISIBLE, raising=False)
    monkeypatch.setattr(gpus, "_DRIVER", str(tmp_path / "no_driver"))
    code, _, err = launch(tmp_path, workers=2)
    assert code == 0, err
    assert [seen(tmp_path, rank) for rank in range(2)] == [[None], [None]]


@pytest.mark.parametrize(("folders", "expected"), [(0, []), (2, ["0", "1"])])
def test_the_drivers_gpus_are_numbered_in_pci_bus_order(tmp_path, folders, expected):
    for i in range(folders):
        (tmp_path / f"0000:0{i}:00.0").mkdir()
    assert gpus.visible({}, driver=str(tmp_path)) == expected
    shares = gpus.shares(expected, 2)
    added = gpus.environment(shares[0], {}) if shares else {}
    assert added == ({gpus.VISIBLE: "0", gpus.ORDER: "PCI_BUS_ID"} if folders else {})
