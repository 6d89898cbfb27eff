"""Every run quoted in README.md and docs/ has the format today's code prints, and was
produced by `python -m tests.transcripts` from the command shown above it.

The lines a run prints (start, epoch, done, weights, time, evaluate) are made here by the
code that prints them, from sample values, and reduced to their shape: numbers become N,
a digest H, and each run of `name N` pairs one M. A quoted line of the same kind must have
the same shape (the start line: the same keys, in order). A line the code no longer prints
that way (a key added, a field renamed) fails here until the transcript is made again.
"""

import functools
import re

import pytest
import tensorflow as tf

from tests import transcripts
from tf_mgpu import timing
from tf_mgpu.config import Config
from tf_mgpu.engine.step import jit, pace
from tf_mgpu.outputs import report

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_PAIR = re.compile(r"\b[a-z][a-z_]* N(?=  |$)")
_PHASES = re.compile(r"[a-z]+ N(?: \+ [a-z]+ N)*")


def shape(line: str) -> str:
    line = re.sub(r"\b[0-9a-f]{64}\b", "H", line)
    line = re.sub(r"model=\S+", "model=PATH", line)
    line = re.sub(r"(?<=examples )(\S+) of .+?(?=  model=)", r"\1 of SPLIT", line)  # evaluate's
    line = _NUMBER.sub("N", line)
    line = _PHASES.sub("P", line) if line.startswith("tf_mgpu time:") else line
    line = _PAIR.sub("M", line)
    return re.sub(r"M(?:  M)+", "M", line)


def start_keys(line: str) -> list[str]:
    """The keys of a start line, in order; `devices=...` as quoted (cut) or whole."""
    return re.findall(r"(?:^|\s)(\w+)=", line.removeprefix("tf_mgpu start:"))


def _record(split_names=("train", "test"), **more) -> dict:
    record = {"epoch": 1, "examples_per_second": 68559.0, "seconds": 0.1, **more}
    for split in split_names:
        record.update({f"{split}_loss": 0.5, f"{split}_accuracy": 0.8})
    return record


@functools.cache
def code_lines() -> dict[str, set[str]]:
    """The shapes the code prints, by kind, from sample values."""
    unmeasured = pace.Pace(1.0)
    measured = pace.Pace(1.0, cap=500)
    measured.record(10, 0.1)
    record = _record()
    summary = {**record, "train_seconds": 0.2, "peak_host_memory_mib": 696.0}
    breakdown = {"total": 5.5, "import": 3.5, "data": 0.2, "train": 0.2}
    start = report.start_line(
        tf.distribute.get_strategy(),
        "worker:0",
        Config(),
        128,
        "mnist_mlp",
        jit.Choice("none", "--nojit_compile").describe(),
        "resident (auto: it fits)",
    )
    return {
        "tf_mgpu start:": {" ".join(start_keys(start))},
        "epoch ": {  # epochs=30: the epoch padded to the width of 30
            shape(report.epoch_line(r, epochs))
            for r in (record, _record(("train", "val", "test")))
            for epochs in (2, 30)
        },
        "tf_mgpu done:": {shape(report.final_line(summary))},
        "tf_mgpu weights:": {
            shape(report.weights_line("0" * 64)),
            shape(report.weights_line("0" * 64, 2)),
        },
        "tf_mgpu time:": {
            shape(f"{timing.line(breakdown)}; calls: {p.describe()}")
            for p in (unmeasured, measured)
        },
        "tf_mgpu evaluate:": {
            shape(
                f"tf_mgpu evaluate: {report.values(record, 'test', loss_first=True)}"
                "  examples 2,000 of test[:2000] (from /tmp/m/flags.txt)  model=/tmp/m  replicas=2"
            )
        },
    }


def quoted_lines() -> list[tuple[str, str]]:
    """(where, line) for each line of a run's output quoted in README.md and docs/."""
    found = []
    for block in transcripts.output_blocks():
        for number, line in enumerate(block.lines, block.first_line):
            line = transcripts.unprefixed(line)
            # "tf_mgpu done: --model_dir=... already holds N epochs" is another line, of a rerun.
            if line.startswith(transcripts.KINDS) and not line.startswith("tf_mgpu done: --"):
                found.append((f"{block.page.name}:{number}", line))
    return found


def test_pages_quote_runs_and_the_shapes_are_read():
    lines = quoted_lines()
    assert len(lines) >= 20, lines
    assert shape("epoch 1/2  train_loss 1.0  train_acc 0.7  5,000 ex/s  0.1 s") == (
        "epoch N/N  M  N ex/s  N s"
    )


@pytest.mark.parametrize(("where", "line"), quoted_lines(), ids=lambda v: str(v)[:60])
def test_each_quoted_line_has_the_format_the_code_prints(where, line):
    kind = next(k for k in transcripts.KINDS if line.startswith(k))
    expected = code_lines()[kind]
    got = " ".join(start_keys(line)) if kind == "tf_mgpu start:" else shape(line)
    if "..." in line.replace("devices=...", ""):  # a quote cut short: what is left holds
        if kind == "tf_mgpu start:":
            keys = iter(next(iter(expected)).split())
            assert all(key in keys for key in got.split()), (where, got, expected)
        else:
            head = got.split("...")[0].strip()
            assert any(e.startswith(head) for e in expected), (where, got, expected)
        return
    assert got in expected, (
        f"{where}: this quoted line is older than the code; run `python -m tests.transcripts` "
        f"to make it again.\n  quoted: {got}\n  code:   {sorted(expected)}"
    )


def test_each_quoted_run_follows_the_command_that_made_it():
    # Any line tf_mgpu prints (its errors, data and resume lines too), or a shell prompt.
    printed = ("tf_mgpu", "epoch ", "$ ")
    for block in transcripts.output_blocks():
        if any(transcripts.unprefixed(line).startswith(printed) for line in block.lines):
            assert block.command, (
                f"{block.page.name}:{block.first_line}: a quoted run needs the ```sh block "
                f"that made it just above it (python -m tests.transcripts runs it)"
            )
