"""Where the suite's time goes: wall and CPU seconds of each test, its own and its processes'.

    TF_MGPU_CPU_LOG=/tmp/cpu python -m pytest -p tests.cpu_usage   # a file per pytest worker
    python -m tests.cpu_usage /tmp/cpu        # totals, the costliest files and tests

Each test's record holds its wall time and the CPU time of the pytest worker (`self`: the
tests that train in-process) and of the processes it started and waited for (`processes`:
`python -m tf_mgpu.main` and the like), each for setup, call and teardown. A process's CPU
counts once it has been waited for (a run forked by tests/forkserver.py, once the test has
seen its exit): the daemons a module fixture starts (the one-node Slurm) count in the test
after which they are stopped. The suite runs on two pytest workers and two cores: when CPU
time summed over every test nears twice the wall time, only less CPU work shortens it; wall
time well above CPU time is waiting.
"""

import argparse
import collections
import json
import os
import pathlib
import resource
import time

import pytest

from tests import forkserver

LOG = "TF_MGPU_CPU_LOG"
_PHASES = pytest.StashKey[dict]()


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    forked = forkserver.cpu_seconds if who == resource.RUSAGE_CHILDREN else 0.0
    return usage.ru_utime + usage.ru_stime + forked


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get(LOG)
    if not folder:
        yield
        return
    phases = {}
    item.stash[_PHASES] = phases
    yield
    record = {"test": item.nodeid, **phases}
    os.makedirs(folder, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(folder, f"{name}.jsonl"), "a") as out:
        out.write(json.dumps(record) + "\n")


def _measured(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        phases = item.stash.get(_PHASES, None)
        if phases is None:
            yield
            return
        start = (time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN))
        yield
        wall = time.monotonic() - start[0]
        own = _cpu(resource.RUSAGE_SELF) - start[1]
        processes = _cpu(resource.RUSAGE_CHILDREN) - start[2]
        phases[phase] = {"wall": wall, "self": own, "processes": processes}

    return hook


pytest_runtest_setup = _measured("setup")
pytest_runtest_call = _measured("call")
pytest_runtest_teardown = _measured("teardown")


def read(folder: pathlib.Path) -> list[dict]:
    """Every test's record, from every pytest worker's file."""
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in open(path)]


def totals(record: dict, phases=("setup", "call", "teardown")) -> dict[str, float]:
    summed = collections.Counter()
    for phase in phases:
        summed.update(record.get(phase, {}))
    return {key: summed[key] for key in ("wall", "self", "processes")}


def report(records: list[dict], top: int) -> str:
    def line(figures: dict, name: str) -> str:
        cpu = figures["self"] + figures["processes"]
        return (
            f"{figures['wall']:8.1f} {figures['self']:8.1f} {figures['processes']:10.1f} "
            f"{cpu:8.1f}  {name}"
        )

    header = f"{'wall s':>8} {'self s':>8} {'processes':>10} {'CPU s':>8}  "
    everything = collections.Counter()
    waiting = collections.Counter()
    files = collections.defaultdict(collections.Counter)
    for record in records:
        figures = totals(record)
        everything.update(figures)
        waiting.update(totals(record, ("teardown",)))
        files[record["test"].split("::")[0]].update(figures)

    def cost(figures):
        return figures["self"] + figures["processes"]

    lines = [f"{len(records)} tests", header + "what", line(everything, "all")]
    lines.append(line(waiting, "all teardowns"))
    lines += ["", header + f"the {top} costliest files"]
    ranked = sorted(files.items(), key=lambda kv: -cost(kv[1]))[:top]
    lines += [line(figures, name) for name, figures in ranked]
    lines += ["", header + f"the {top} costliest tests"]
    ranked = sorted(records, key=lambda r: -cost(totals(r)))[:top]
    lines += [line(totals(r), r["test"]) for r in ranked]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=pathlib.Path, help=f"the folder {LOG} named")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(report(read(args.folder), args.top))


if __name__ == "__main__":
    main()
