"""Runs the keras.io zoo and writes docs/zoo.md from the run: `python -m tests.zoo`.

Every adapted example (tests/zoo/<section>/*.py) goes through `tests.zoo.one` in a process of
its own (at most `--timeout` seconds each, `--jobs` at once); every example the rule selects
but left out is listed with its reason (tests/zoo/left_out.tsv). `--only=NAME,...` runs some
files again and keeps the other rows of the last run (tests/zoo/outcomes.json).
"""

import argparse
import json
import pathlib
import sys
import tempfile
import time

from tests import support
from tests.zoo import catalog

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTCOMES = ROOT / "tests" / "zoo" / "outcomes.json"


def run(paths: list[pathlib.Path], timeout: float) -> list[dict]:
    """`tests.zoo.one` on each of `paths` at once, each forked from a process that has
    imported TensorFlow (tests/forkserver.py); their outcomes, in order."""
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        commands = {
            path.stem: (
                [
                    sys.executable,
                    "-m",
                    "tests.zoo.one",
                    str(path.relative_to(ROOT)),
                    str(folder / f"{path.stem}.json"),
                ],
                support.environment(),
            )
            for path in paths
        }
        done = support.run_processes(commands, folder / "logs", timeout)
        outcomes = []
        for path in paths:
            out = folder / f"{path.stem}.json"
            if out.exists():
                outcomes.append(json.loads(out.read_text()))
                continue
            finished = done[path.stem]
            last = (finished.stderr.strip().splitlines() or ["no output"])[-1][:300]
            outcomes.append(
                {
                    "file": str(path.relative_to(ROOT)),
                    "source": catalog.source_of(path),
                    "status": "failed",
                    "detail": f"exit {finished.returncode}: {last}",
                    "seconds": round(finished.seconds, 1),
                }
            )
        return outcomes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.zoo", description=__doc__)
    parser.add_argument("--only", default="", help="file stems to run again, comma-separated")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--jobs", type=int, default=2, help="examples run at once")
    parser.add_argument("--docs", default=str(ROOT / "docs" / "zoo.md"))
    parser.add_argument(
        "--page", action="store_true", help="write the page from the last outcomes, run nothing"
    )
    args = parser.parse_args(argv)
    if args.page:
        outcomes = json.loads(OUTCOMES.read_text())
        pathlib.Path(args.docs).write_text(catalog.page(outcomes))
        print(f"zoo: {', '.join(f'{v} {k}' for k, v in catalog.counts(outcomes).items())}")
        return 0
    files = catalog.adapted()
    only = {name for name in args.only.split(",") if name}
    kept = json.loads(OUTCOMES.read_text()) if only and OUTCOMES.exists() else []
    kept = [o for o in kept if pathlib.Path(o["file"]).stem not in only]
    started = time.perf_counter()
    outcomes = list(kept)
    chosen = [path for path in files if not only or path.stem in only]
    for at in range(0, len(chosen), args.jobs):
        for outcome in run(chosen[at : at + args.jobs], args.timeout):
            outcomes.append(outcome)
            seconds = outcome.get("seconds", 0)
            print(f"{outcome['status']:8s} {seconds:6.1f} s  {outcome['file']}", flush=True)
        outcomes.sort(key=lambda o: o["file"])
        OUTCOMES.write_text(json.dumps(outcomes, indent=1) + "\n")
    took = time.perf_counter() - started
    pathlib.Path(args.docs).write_text(catalog.page(outcomes))
    counts = catalog.counts(outcomes)
    print(f"zoo: {', '.join(f'{v} {k}' for k, v in counts.items())} in {took / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
