"""One all-reduce after each call: every worker follows the chief's counts and save, and
anyone's stop and first bad step."""

import concurrent.futures
import threading

import pytest

from tf_mgpu.engine.distribute import agreement


class AllReduce:
    """A sum over workers that each call from their own thread, as the collective sums:
    each worker's values counted once per local replica."""

    def __init__(self, workers: int, local_replicas: int):
        self._barrier = threading.Barrier(workers)
        self._local = local_replicas
        self._parts: dict[int, list] = {}
        self._lock = threading.Lock()

    def total(self, rank: int, values: list) -> list:
        with self._lock:
            self._parts[rank] = [self._local * float(v) for v in values]
        self._barrier.wait()
        summed = [sum(column) for column in zip(*self._parts.values(), strict=True)]
        self._barrier.wait()  # every worker read the sum before the next call's parts
        return summed


def agree_all(views: list[agreement.Decision], local_replicas: int = 1) -> list:
    """What each worker decides (worker 0 the chief) when their views are `views`, and
    whether each stopped for another's signal."""
    reduce = AllReduce(len(views), local_replicas)
    agreements = [
        agreement.DecisionAgreement(
            lambda view=view: view,
            total=lambda values, rank=rank: reduce.total(rank, values),
            is_chief=rank == 0,
            local_replicas=local_replicas,
        )
        for rank, view in enumerate(views)
    ]
    with concurrent.futures.ThreadPoolExecutor(len(views)) as pool:
        decided = list(pool.map(lambda a: a.agree(), agreements))
    return decided, [a.stopped_elsewhere for a in agreements]


def test_every_worker_follows_the_chiefs_counts_and_save():
    views = [
        agreement.Decision(stop=False, steps=37, eval_steps=12, save=True),
        agreement.Decision(stop=False, steps=5, eval_steps=90, save=False),
        agreement.Decision(stop=False, steps=64, eval_steps=1, save=False),
    ]
    for local_replicas in (1, 4):  # GPUs: several replicas per worker
        decided, _ = agree_all(views, local_replicas)
        assert set(decided) == {agreement.Decision(stop=False, steps=37, eval_steps=12, save=True)}


def test_any_workers_stop_stops_every_worker():
    views = [
        agreement.Decision(stop=False, steps=8, eval_steps=8, save=False),
        agreement.Decision(stop=True, steps=8, eval_steps=8, save=False),
    ]
    decided, elsewhere = agree_all(views)
    assert [d.stop for d in decided] == [True, True]
    assert elsewhere == [True, False]


def test_one_process_decides_alone():
    mine = agreement.Decision(stop=True, steps=3, eval_steps=2, save=True)
    assert agreement.DecisionAgreement(lambda: mine).agree() == mine


@pytest.mark.parametrize("local_replicas", [1, 4])
def test_every_worker_stops_at_the_first_bad_step_any_worker_saw(local_replicas):
    # A call of 6 steps on 3 workers: worker 1's rows gave step 4 a non-finite loss, worker
    # 2 saw it a step later through the gradient, the chief not at all (loss scaling).
    def view(bad):
        return agreement.Decision(stop=False, steps=6, eval_steps=0, save=False, call=6, bad=bad)

    decided, _ = agree_all([view(0), view(4), view(5)], local_replicas)
    assert [d.bad for d in decided] == [4, 4, 4]
    decided, _ = agree_all([view(0), view(0), view(0)], local_replicas)
    assert [d.bad for d in decided] == [0, 0, 0]
