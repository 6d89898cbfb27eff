"""Makes every quoted run in README.md and docs/ again, from real runs.

    python -m tests.transcripts                 # every page
    python -m tests.transcripts --only tasks    # the pages whose name holds "tasks"
    python -m tests.transcripts --list          # what would run, and where

A quoted run is a fenced block of what tf_mgpu printed, right after the ```sh block whose
commands printed it. This script runs each such ```sh block with bash from the repository's
root (as a reader would paste it: ../shared beside the clone), keeps the lines tf_mgpu
printed, and writes them into the block below. A quoted start line cut at `devices=...`
stays cut. Runs take seconds to a minute each; a failed command leaves its block as it was
and is named at the end (exit 1). `tests/test_transcripts.py` checks that every quoted
line has the format today's code prints, and that each follows its command.
"""

import argparse
import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Pages with quoted runs; the build log's are history, the benchmark pages are written by
# the benchmark itself (python -m tf_mgpu.bench --markdown).
PAGES = [ROOT / "README.md"] + [
    p
    for p in sorted((ROOT / "docs").glob("*.md"))
    if p.name not in ("build-log.md", "benchmarks.md", "benchmarks-input.md")
]
# The lines of a run, by how they start: these are kept, and their format is tested.
KINDS = (
    "tf_mgpu start:",
    "epoch ",
    "tf_mgpu done:",
    "tf_mgpu weights:",
    "tf_mgpu time:",
    "tf_mgpu evaluate:",
)
# A line as a worker printed it, behind the launcher's "[worker:0] ", srun's "0: " or a
# shell loop's "pod 0: ".
_WORKER = r"(\[[a-z]+:\d+\] |(?:pod )?\d+: )"
_PREFIX = re.compile("^" + _WORKER)


def unprefixed(line: str) -> str:
    """The line as the worker printed it."""
    return _PREFIX.sub("", line)


@dataclasses.dataclass
class Block:
    page: pathlib.Path
    first_line: int  # the line number of its first line of text
    lines: list[str]
    command: str | None  # the ```sh block just above, if any
    start: int  # index of the opening fence in the page's lines
    end: int  # index of the closing fence


def blocks(page: pathlib.Path) -> list[Block]:
    """The page's fenced blocks with no language (quoted output), each with the ```sh
    block that ends on the line just above it."""
    lines = page.read_text().splitlines()
    found, i, previous_sh = [], 0, None
    while i < len(lines):
        if lines[i].startswith("```"):
            language = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = lines[i + 1 : j]
            if language == "":
                command = previous_sh[1] if previous_sh and previous_sh[0] == i - 1 else None
                found.append(Block(page, i + 2, body, command, i, j))
            previous_sh = (j, "\n".join(body)) if language in ("sh", "bash") else None
            i = j + 1
        else:
            i += 1
    return found


def output_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


# What TensorFlow, absl and Python's warnings print around tf_mgpu's lines: left out.
_NOISE = re.compile(
    "^" + _WORKER + "?("
    r"[IWEF]\d{4} [\d:.]+\s+\d+ \S+\]"  # TensorFlow's C++ and absl's log lines
    r"|WARNING: All log messages before absl"
    r"|To enable the following instructions"
    r"|\S+\.py:\d+: \w*Warning: )"  # a Python warning (its source line follows, indented)
)


def _kept(output: str, cut_devices: bool) -> list[str]:
    kept, after_warning = [], False
    for line in output.splitlines():
        line = line.rstrip()
        if after_warning and line.startswith("  "):
            continue
        after_warning = bool(_NOISE.match(line)) and "Warning: " in line
        if line and not _NOISE.match(line):
            kept.append(re.sub(r"devices=\S+", "devices=...", line) if cut_devices else line)
    return kept


def make(block: Block, timeout: float) -> list[str] | None:
    """Runs the block's command; the lines to quote, or None if it failed."""
    with subprocess.Popen(
        ["bash", "-c", block.command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # in the order they were printed
        text=True,
        start_new_session=True,  # its own process group: a timeout ends all it started
    ) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            print(f"timed out after {timeout:g} s; it printed:\n{output[-3000:]}", file=sys.stderr)
            return None
    if process.returncode != 0 and "exit $?" not in block.command:  # a failure it shows
        print(output[-3000:], file=sys.stderr)
        return None
    cut = any("devices=..." in line for line in block.lines)
    return _kept(output, cut)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="pages whose file name holds this")
    parser.add_argument("--list", action="store_true", help="name the runs, run nothing")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = parser.parse_args(argv)
    failed = []
    for page in PAGES:
        if args.only not in page.name:
            continue
        count = len([b for b in blocks(page) if b.command])
        # In page order (a later block may use what an earlier one made), each found anew
        # since the blocks before it changed length.
        for k in range(count):
            block = [b for b in blocks(page) if b.command][k]
            where = f"{page.relative_to(ROOT)}:{block.first_line}"
            if args.list:
                print(f"{where}: {block.command.splitlines()[0]}")
                continue
            print(f"{where}: running", flush=True)
            lines = make(block, args.timeout)
            if lines is None:
                failed.append(where)
                continue
            text = page.read_text().splitlines()
            text[block.start + 1 : block.end] = lines
            page.write_text("\n".join(text) + "\n")
    for where in failed:
        print(f"tests.transcripts: the command above {where} failed; its block is unchanged")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
