"""The zoo's catalog: the adapted examples, those left out and why, and docs/zoo.md's page."""

import collections
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SECTIONS = ("vision", "nlp", "structured_data", "timeseries", "generative")
LEFT_OUT = HERE / "left_out.tsv"
COMMAND = "python -m tests.zoo"


def adapted() -> list[pathlib.Path]:
    """Every adapted example, by section then name."""
    return [
        path
        for section in SECTIONS
        for path in sorted((HERE / section).glob("*.py"))
        if path.name != "__init__.py"
    ]


def source_of(path: pathlib.Path) -> str:
    """The keras.io file an adapted example came from (its first line names it)."""
    return path.read_text().splitlines()[0].split(": ", 1)[-1].strip()


def left_out() -> list[tuple[str, str]]:
    """(source path, reason) of every example the rule selects but that was not adapted."""
    rows = []
    for line in LEFT_OUT.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            source, reason = line.split("\t", 1)
            rows.append((source.strip(), reason.strip()))
    return rows


def counts(outcomes: list[dict]) -> dict[str, int]:
    return dict(collections.Counter(o["status"] for o in outcomes).most_common())


# What each status means, as the page says it.
MEANING = {
    "equal": "trained on 2 replicas, its weights equal Keras fit's on one device",
    "replica": "trained on 2 replicas; its weights (or its test figures) differ from Keras "
    "fit's (evaluate's) on one device but equal Keras fit's (evaluate's) on the same 2 "
    "replicas: the model computes over each replica's share (a loss over the whole batch, a "
    "mean a train_step takes over its share, a train_step or test_step that reports the loss "
    "Keras divided by the replicas)",
    "differs": "trained on 2 replicas, its weights differ from Keras fit's on one device and "
    "on 2 replicas",
    "random": "trained; it draws random numbers in training other than dropout and Keras's "
    "augmentation layers (a GAN's noise, stochastic depth, RandomCrop), so the two sides "
    "cannot be compared",
    "refused": "refused before training, in the one line shown",
    "failed": "did not train or export (the error shown)",
    "not run": f"adapted, but not run by the last `{COMMAND}`: on 2 cores the whole zoo takes "
    "about an hour, and that run was stopped for time (`--only=NAME` runs it)",
}


def page(outcomes: list[dict]) -> str:
    """docs/zoo.md: every example the rule selects, adapted or left out."""
    ran = {o["source"] for o in outcomes}
    outcomes = outcomes + [
        {"file": str(p), "source": source_of(p), "status": "not run"}
        for p in adapted()
        if source_of(p) not in ran
    ]
    by_section = collections.defaultdict(list)
    for outcome in outcomes:
        by_section[outcome["source"].split("/")[1]].append(outcome)
    counted = counts(outcomes)
    lines = [
        "# The keras.io zoo",
        "",
        f"Made by `{COMMAND}` (tests/zoo/README.md says which examples and how each is "
        "adapted). Each adapted example is trained by tf_mgpu one epoch of 4 steps on 2 CPU "
        "replicas of 16, exported, reloaded by Keras's `load_model` and checked against the "
        "run's figures, and compared with Keras's own `fit` on one device at the global batch "
        "of 32, on the same examples in the same order, dropout and augmentation layers off "
        "on both sides as `check` turns them off (float64 where the model runs in float64). "
        "`vs fit` is the largest weight difference, relative where a weight is above 1.",
        "",
        f"{len(outcomes)} adapted: "
        + ", ".join(f"{count} {status}" for status, count in counted.items())
        + f"; {len(left_out())} left out.",
        "",
        *[f"- **{status}**: {MEANING[status]}" for status in MEANING if status in counted],
        "",
    ]
    for section in SECTIONS:
        rows = sorted(by_section.get(section, []), key=lambda o: o["source"])
        if not rows:
            continue
        lines += [f"## {section}", "", "| example | status | dtype | vs fit | notes |"]
        lines += ["|---|---|---|---|---|"]
        for o in rows:
            name = o["source"]
            difference = f"{o['difference']:.1e}" if "difference" in o else ""
            notes = o.get("detail", "")
            if o.get("randomness_off"):
                notes = (notes + "; " if notes else "") + "off: " + ", ".join(o["randomness_off"])
            notes = notes.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| `{name}` | {o['status']} | {o.get('dtype', '')} | {difference} | {notes} |"
            )
        lines.append("")
    lines += ["## Left out", "", "| example | why |", "|---|---|"]
    lines += [f"| `{source}` | {reason} |" for source, reason in sorted(left_out())]
    return "\n".join(lines) + "\n"


def recorded(page_text: str) -> dict[str, str]:
    """{source path: status} of every adapted example docs/zoo.md lists, and {source path:
    "left out"} of those it lists as left out."""
    found = {}
    for line in page_text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`examples/"):
            source = cells[0].strip("`")
            found[source] = cells[1] if cells[1] in MEANING else "left out"
    return found


def ci_sample(page_text: str) -> list[pathlib.Path]:
    """The examples CI's zoo stage runs again: every third adapted example that the page
    records as run (the whole zoo takes about an hour on 2 cores; `python -m tests.zoo` runs
    all)."""
    statuses = recorded(page_text)
    ran = [p for p in adapted() if statuses.get(source_of(p), "not run") != "not run"]
    return ran[::3]
