"""The benchmark's report as Markdown, for docs/benchmarks.md: written by a command, not by hand.

  python -m tf_mgpu.bench --manual_dir=DIR --markdown=docs/benchmarks.md    # run, then write it
  python -m tf_mgpu.tools.benchmarks.markdown OUT/bench.json docs/benchmarks.md  # again, from a run

The page says when, where and by which command its figures were measured,
then holds the tables exactly as the run printed them (`tables`), so any
figure the README quotes can be found in it.
"""

import argparse
import json
import pathlib
import sys

from tf_mgpu.tools.benchmarks import tables
from tf_mgpu.tools.benchmarks.variants import Settings

TITLE = "# Benchmark report"


def render(report: dict) -> str:
    """The page for `report` (what `runner.run` returns and bench.json holds)."""
    env = report["environment"]
    settings = Settings(**report["settings"])
    command = report.get("command") or "(not recorded)"
    printed = "\n\n".join(
        [
            tables.header(env, settings, report["rounds"], len(report["table"])),
            tables.format_report(report),
        ]
    )
    return "\n".join(
        [
            TITLE,
            "",
            "Written by `python -m tf_mgpu.bench --markdown=...` (or again from its bench.json by",
            "`python -m tf_mgpu.tools.benchmarks.markdown`); do not edit by hand. How to read it:",
            "[speed.md](speed.md).",
            "",
            f"- date: {env['date']}",
            f"- machine: {env['cpu']}, {env['cores']} cores (host {env['hostname']})",
            f"- command: `{command}`",
            "",
            "```",
            printed,
            "```",
            "",
        ]
    )


def write(report: dict, path: pathlib.Path) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report))
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf_mgpu.tools.benchmarks.markdown",
        description="Write a benchmark run's bench.json as the Markdown page docs/benchmarks.md.",
    )
    parser.add_argument("report", type=pathlib.Path, help="bench.json of a run (its --out)")
    parser.add_argument("page", type=pathlib.Path, help="the page to write")
    args = parser.parse_args(argv)
    write(json.loads(args.report.read_text()), args.page)
    print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
