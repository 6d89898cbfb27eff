"""The report of `bench --input`: per format, full dataset beside its 1% subset, the
ratios against issue 23's targets, as markdown (for docs/benchmarks.md) and JSON."""

import pathlib

from tf_mgpu import strict_json
from tf_mgpu.tools.benchmarks import input_measure

TARGETS = {
    "first_step": 2.0,  # full / subset, at most
    "resume": 2.0,  # full / subset, at most
    "input_over_training": 2.0,  # input alone / training examples/s, at least
    "bytes_two_over_one": 0.55,  # per worker at 2 workers / 1 worker, at most
}
HOW = (
    "How each figure is measured (`tf_mgpu.tools.benchmarks.input_measure`): every run is a real "
    "`python -m tf_mgpu.main` process on the format's task file, one replica per worker, "
    "`--steps_per_loop=1`, a checkpoint every tenth of an epoch (K steps). *Time to the "
    "first step*: from the process's start to the first redraw of its progress bar with a "
    "step done (its stdout is a pseudo-terminal). *Resume latency at 10% / 90%*: the same, "
    "for a process resuming from the checkpoint at step K / 9K (the steps are in the row). "
    "*Training ex/s*: steps x global batch between the resumed run's checkpoints 2K..9K "
    "(as the files appeared). *Input alone*: the pipeline one worker trains from "
    "(`stream.train_dataset`, or `stream_shard.worker_steps` for a tf.data split; one pipeline, "
    "one replica) iterated without "
    "training (`tf_mgpu.tools.benchmarks.input_probe`), after its data loaded. *Bytes read per "
    "worker per epoch*: bytes per step between checkpoints (1 worker: 2K..9K; 2 workers at "
    "half the batch each: K..3K) times the steps of an epoch, counted per worker process "
    "tree: for memmap, the bytes the task's `__getitem__` returned; for tfrecord, "
    "/proc/<pid>/io rchar (bytes through read(), page cache included)."
)


def _pick(results: list[dict], unit: str) -> dict:
    return next((r for r in results if r["unit"] == unit), {})


def _ratio(a, b) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ratio: float | None, target: float, at_most: bool) -> str:
    if ratio is None:
        return "not measured"
    return "PASS" if (ratio <= target if at_most else ratio >= target) else "MISS"


def rows(fmt: str, results: list[dict]) -> list[dict]:
    """The figures of one format: name, full, subset, ratio, target, result."""
    full = _pick(results, f"chain {fmt} full")
    subset = _pick(results, f"chain {fmt} subset")
    two = _pick(results, f"two_workers {fmt}")
    probe = _pick(results, f"probe {fmt}")
    found = []

    def add(name, a, b, ratio, target, at_most, shown_target):
        found.append(
            {
                "figure": name,
                "full": a,
                "subset": b,
                "ratio": ratio,
                "target": shown_target,
                "result": _verdict(ratio, target, at_most),
            }
        )

    a, b = full.get("first_step_seconds"), subset.get("first_step_seconds")
    add("time to first step (s)", a, b, _ratio(a, b), TARGETS["first_step"], True, "≤ 2x subset")
    for at in ("10", "90"):
        a = full.get("resume_seconds", {}).get(at)
        b = subset.get("resume_seconds", {}).get(at)
        steps = [f"{r['resume_steps'][at]}/{r['steps_per_epoch']}" for r in (full, subset) if r]
        name = f"resume latency at {at}% (s; from step {', '.join(steps) or '?'})"
        add(name, a, b, _ratio(a, b), TARGETS["resume"], True, "≤ 2x subset")
    training = full.get("one_worker", {}).get("examples_per_second")
    alone = probe.get("input", {}).get("examples_per_second")
    ratio = _ratio(alone, training)
    add(
        "input alone, 1 worker (ex/s)",
        alone,
        None,
        ratio,
        TARGETS["input_over_training"],
        False,
        "≥ 2x training",
    )
    add("training, 1 worker (ex/s)", training, None, None, 0, True, "")
    found[-1]["result"] = ""
    one = full.get("one_worker", {}).get("bytes_per_step")
    steps = full.get("steps_per_epoch")
    one_epoch = one[0] * steps if one else None
    per_worker = [b * steps for b in two.get("two_workers", {}).get("bytes_per_step", [])]
    worst = max(per_worker) if per_worker else None
    add("bytes read per epoch, 1 worker", one_epoch, None, None, 0, True, "")
    found[-1]["result"] = ""
    name = "bytes read per epoch per worker, 2 workers"
    if two.get("sharding"):
        name += f" ({two['sharding']})"
    add(
        name,
        per_worker or None,
        None,
        _ratio(worst, one_epoch),
        TARGETS["bytes_two_over_one"],
        True,
        "≤ 0.55x 1 worker",
    )
    return found


def _shown(value, figure: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(_shown(v, figure) for v in value)
    if figure.startswith("bytes"):
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if value >= scale:
                return f"{value / scale:.2f} {unit}"
        return f"{value:.0f} B"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def extrapolated(full: dict, found: list[dict], size: float = 1e12, workers: int = 64) -> list:
    """The cost model's inputs, and what they give for `size` bytes on `workers` workers if
    each worker keeps its measured rates and reads the share measured at 2 workers."""
    figure = {row["figure"].split(" (")[0]: row for row in found}
    alone = figure["input alone, 1 worker"]["full"]
    training = figure["training, 1 worker"]["full"]
    share = figure["bytes read per epoch per worker, 2 workers"]["ratio"]
    if not full or None in (alone, training, share):
        return ["(no extrapolation: a figure it needs is missing)"]
    per_example = full["dataset_bytes"] / full["train_examples"]
    examples = size / per_example
    rate = min(alone, training)
    # At 2 workers each read `share` of 1 worker's bytes: within the target, each reads its
    # 1/N at N workers; beyond it, each is taken to read everything (as a stream sharded by
    # example does).
    sharded = share <= TARGETS["bytes_two_over_one"]
    read = size / workers if sharded else size
    return [
        f"Per worker: input alone {alone * per_example / 2**20:,.0f} MiB/s, training "
        f"{training * per_example / 2**20:,.0f} MiB/s ({per_example:,.0f} bytes per example). "
        f"Extrapolated to {size / 1e12:g} TB on {workers} workers, if each keeps these rates "
        f"and reads {'its 1/N' if sharded else 'everything'} as at 2 workers: "
        f"{read / 2**30:,.1f} GiB read per worker "
        f"per epoch, an epoch in {examples / (workers * rate) / 60:,.0f} min (all-reduce "
        f"and storage bandwidth not counted)."
    ]


def markdown(report: dict) -> str:
    env, settings = report["environment"], report["settings"]
    lines = [
        "# Input at scale (`python -m tf_mgpu.bench --input`)",
        "",
        f"{env['date']} on {env['hostname']}: {env['cpu']}, {env['cores']} cores, load "
        f"average {', '.join(f'{x:.2f}' for x in env['load_average'])} at start; "
        f"dataset {settings['data']}, global batch {settings['batch']}, "
        f"{settings['jobs']} run(s) at once"
        + (" (timings not comparable: runs shared the machine)" if settings["jobs"] > 1 else ""),
        "",
    ]
    for fmt in settings["formats"]:
        full = _pick(report["results"], f"chain {fmt} full")
        subset = _pick(report["results"], f"chain {fmt} subset")
        sizes = [
            f"{name}: {r['train_examples']:,} training examples, "
            f"{_shown(r['dataset_bytes'], 'bytes')}, {r['steps_per_epoch']:,} steps per epoch"
            for name, r in (("full", full), ("subset", subset))
            if r
        ]
        lines += [
            f"## {fmt} (examples/synthetic_{fmt}_task.py)",
            "",
            "; ".join(sizes) + ".",
            "",
            "| figure | full | subset | ratio | target | result |",
            "|---|---:|---:|---:|---|---|",
        ]
        for row in report["formats"][fmt]:
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}x"
            lines.append(
                f"| {row['figure']} | {_shown(row['full'], row['figure'])} | "
                f"{_shown(row['subset'], row['figure'])} | {ratio} | {row['target']} | "
                f"{row['result']} |"
            )
        lines += ["", *extrapolated(full, report["formats"][fmt]), ""]
    lines += [HOW, ""]
    for failure in report["failures"]:
        lines += [f"FAILED: {failure['unit']}", "```", failure["log"][-3000:], "```", ""]
    return "\n".join(lines)


def build(settings: input_measure.Settings, env: dict, results: list, failures: list) -> dict:
    return {
        "environment": env,
        "settings": {
            "data": str(settings.data),
            "batch": settings.batch,
            "formats": list(settings.formats),
            "probe_seconds": settings.probe_seconds,
            "jobs": settings.jobs,
        },
        "formats": {fmt: rows(fmt, results) for fmt in settings.formats},
        "results": sorted(results, key=lambda r: r["unit"]),
        "failures": failures,
    }


def write(report: dict, out: pathlib.Path) -> list[pathlib.Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "input.md", out / "input.json"]
    paths[0].write_text(markdown(report))
    paths[1].write_text(strict_json.dumps(report, indent=1, default=str) + "\n")
    return paths
