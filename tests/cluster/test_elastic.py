"""The elastic rules, without processes: --workers=MIN:MAX, the shrink, the per-replica batch."""

import pytest

from tf_mgpu.cluster import elastic
from tf_mgpu.errors import UserError


@pytest.mark.parametrize(
    ("text", "expected"), [("3", (3, 3)), ("2:3", (2, 3)), (" 1:4 ", (1, 4)), ("2:2", (2, 2))]
)
def test_workers_is_n_or_min_max(text, expected):
    assert elastic.parse_workers(text) == expected


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("0", "0 is not a positive integer"),
        ("0:2", "0 is not a positive integer"),
        ("3:2", "MIN 3 is above MAX 2"),
        ("x", "'x' is not N or MIN:MAX"),
        ("2:", "'' is not N or MIN:MAX"),
        ("1:2:3", "'2:3' is not N or MIN:MAX"),
    ],
)
def test_a_bad_workers_value_says_why(text, named):
    with pytest.raises(ValueError, match=named):
        elastic.parse_workers(text)


def test_each_restart_leaves_out_one_worker_down_to_min():
    sizes = [4]
    for _ in range(4):
        sizes.append(elastic.next_size(sizes[-1], minimum=2))
    assert sizes == [4, 3, 2, 2, 2]
    assert elastic.next_size(3, minimum=3) == 3, "plain --workers=N never shrinks"


@pytest.mark.parametrize(
    ("batch_size", "batch_workers", "workers", "per_replica"),
    [
        (32, None, 2, 32),  # no --batch_workers: --batch_size on any count
        (32, 3, 3, 32),
        (32, 3, 2, 48),  # 96 examples per step, whatever the count
        (32, 3, 1, 96),
        (32, 3, 4, 24),
        (48, 2, 3, 32),
    ],
)
def test_the_global_batch_stays_the_same(batch_size, batch_workers, workers, per_replica):
    assert elastic.per_replica_batch(batch_size, batch_workers, workers) == per_replica
    if batch_workers is not None:
        assert per_replica * workers == batch_size * batch_workers


def test_a_share_that_is_not_whole_is_one_line():
    with pytest.raises(UserError) as raised:
        elastic.per_replica_batch(32, 3, 5)
    assert str(raised.value) == (
        "--batch_size=32 per replica on --batch_workers=3 workers does not split evenly over "
        "5 workers (32 x 3 = 96 is not a multiple of 5); run on a worker count that divides "
        "96, or choose another --batch_size"
    )
