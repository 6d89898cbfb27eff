"""One all-reduce after each call: every worker follows the chief's counts and save, and
anyone's stop."""

from tf_mgpu.engine.distribute import agreement


def cluster(views: list[agreement.Decision], local_replicas: int = 1):
    """The agreements of workers whose views are `views` (worker 0 the chief), as the
    all-reduce sums them: each worker's values counted once per local replica."""
    agreements = []

    def total(_values):
        summed = [0.0] * 4
        for rank, view in enumerate(views):
            mine = [float(view.stop), view.steps, view.eval_steps, float(view.save)]
            weight = [1.0] + [float(rank == 0)] * 3  # the stop from all, the rest the chief's
            for i in range(4):
                summed[i] += local_replicas * weight[i] * mine[i]
        return summed

    for rank, view in enumerate(views):
        agreements.append(
            agreement.Agreement(
                lambda view=view: view,
                total=total,
                is_chief=rank == 0,
                local_replicas=local_replicas,
            )
        )
    return agreements


def test_every_worker_follows_the_chiefs_counts_and_save():
    views = [
        agreement.Decision(stop=False, steps=37, eval_steps=12, save=True),
        agreement.Decision(stop=False, steps=5, eval_steps=90, save=False),
        agreement.Decision(stop=False, steps=64, eval_steps=1, save=False),
    ]
    for local_replicas in (1, 4):  # GPUs: several replicas per worker
        decided = {a.agree() for a in cluster(views, local_replicas)}
        assert decided == {agreement.Decision(stop=False, steps=37, eval_steps=12, save=True)}


def test_any_workers_stop_stops_every_worker():
    views = [
        agreement.Decision(stop=False, steps=8, eval_steps=8, save=False),
        agreement.Decision(stop=True, steps=8, eval_steps=8, save=False),
    ]
    chief, other = cluster(views)
    assert chief.agree().stop
    assert chief.stopped_elsewhere
    assert other.agree().stop
    assert not other.stopped_elsewhere


def test_one_process_decides_alone():
    mine = agreement.Decision(stop=True, steps=3, eval_steps=2, save=True)
    assert agreement.Agreement(lambda: mine).agree() == mine
