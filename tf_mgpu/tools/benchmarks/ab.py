"""Two checkouts of tf_mgpu trained side by side: steady examples/s of each, and their ratio.

    python -m tf_mgpu.tools.benchmarks.ab --before=../old --after=. --rounds=3 -- \\
        --epochs=4 --batch_size=64

Each round runs `python -m tf_mgpu.main` with the flags after `--` once from each
checkout, in alternating order, in a fresh --model_dir, with that checkout first on
PYTHONPATH; it reads `steady_examples_per_second` (every epoch but the first) from
each run's summary.json. Prints each run, the medians and after / before, and whether
both trained the same weights (sha256). One timing at a time: the machine is shared.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from absl import app, flags

_BEFORE = flags.DEFINE_string("before", None, "Checkout measured first: its root folder.")
_AFTER = flags.DEFINE_string("after", ".", "Checkout measured against it.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Rounds; each runs both checkouts once.", lower_bound=1)
_TIMEOUT = flags.DEFINE_float("timeout", 1800, "Seconds one run may take.")


def run_once(root: str, args: list[str], folder: pathlib.Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(root)}
    done = subprocess.run(
        [sys.executable, "-m", "tf_mgpu.main", *args, f"--model_dir={folder}", "--clean"],
        cwd=os.path.abspath(root),
        env=env,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT.value,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ab: a run from {root} exited {done.returncode}:\n{done.stderr[-3000:]}")
    summary = json.loads((folder / "summary.json").read_text())
    return {
        "ex_s": summary["steady_examples_per_second"],
        "sha256": summary["weights_sha256"],
        "test_loss": summary["test_loss"],
    }


def main(argv: list[str]) -> None:
    args = argv[1:]
    sides = {"before": _BEFORE.value, "after": _AFTER.value}
    found = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(_ROUNDS.value):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                result = run_once(sides[side], args, pathlib.Path(scratch) / f"{side}{r}")
                found[side].append(result)
                print(f"round {r + 1} {side}: {result['ex_s']:,.0f} ex/s", flush=True)
    medians = {side: statistics.median(x["ex_s"] for x in runs) for side, runs in found.items()}
    same = {x["sha256"] for runs in found.values() for x in runs}
    print(f"flags: {' '.join(args)}")
    print(
        f"median steady ex/s: before {medians['before']:,.0f}  after {medians['after']:,.0f}  "
        f"after/before {medians['after'] / medians['before']:.3f}  "
        f"weights {'identical' if len(same) == 1 else 'differ'} "
        f"(test_loss before {found['before'][0]['test_loss']:.6f}, "
        f"after {found['after'][0]['test_loss']:.6f})"
    )


if __name__ == "__main__":
    flags.mark_flag_as_required("before")
    app.run(main)
