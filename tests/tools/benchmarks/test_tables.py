"""The benchmark's report: the printed tables and the files."""

import dataclasses
import json
import re

from tests.tools.benchmarks.test_figures import compute_probe, fake
from tf_mgpu.tools.benchmarks import figures, startup, tables, variants


def test_report_prints_and_writes_every_table(tmp_path):
    measurements = [fake("seed_torch", 0, 100.0), fake("tf_mgpu", 0, 400.0, wall_seconds=5.0)]
    shown = [variants.TABLE[0], variants.TABLE[2]]
    report = {
        "table": figures.table_rows(shown, measurements),
        "scaling": [],
        "targets": [figures.evaluate(t, measurements) for t in variants.TARGETS],
        "failures": [{"variant": "keras_fit", "round": 0, "log": "boom"}],
    }
    text = tables.format_report(report)
    squeezed = re.sub(" +", " ", text)  # the columns' padding is not the point here
    assert "tf_mgpu 400 4.00x 2.00 1.00x 5.0 0.50x" in squeezed, text
    assert "steady ex/s, tf_mgpu / seed_torch 4.00x >= 3x PASS" in squeezed, text
    assert "steady ex/s, tf_mgpu / keras_fit n/a >= 7x n/a" in squeezed, text
    assert "test accuracy, tf_mgpu - tf_mgpu_all_off n/a pt ± 0.5 pt n/a" in squeezed, text
    assert "test accuracy, tf_mgpu - seed_torch +0.00 pt\n" in squeezed, text
    assert "FAILED runs, left out of the figures: keras_fit (round 1)" in text, text
    paths = tables.write(report, tmp_path)
    assert sorted(p.name for p in paths) == ["bench.json", "table.csv", "targets.csv"], paths
    table = (tmp_path / "table.csv").read_text().splitlines()
    assert table[0].startswith("variant,description,runs,steady_examples_per_second,"), table
    assert json.loads((tmp_path / "bench.json").read_text())["table"][1]["variant"] == "tf_mgpu"


def test_the_compute_and_start_up_sections_show_their_figures_and_verdicts(tmp_path):
    measurements = [fake("tf_mgpu", 0, 200_000.0)]
    probe = compute_probe(0, 250e9)
    report = {
        "table": [],
        "scaling": [],
        "targets": [],
        "failures": [],
        "compute": figures.compute([variants.TABLE[2]], measurements, [probe]),
        "startup": startup.summary([startup.Timed("help", 0, 0.25)]),
    }
    squeezed = re.sub(" +", " ", tables.format_report(report))
    assert "does 1,000,000 FLOP per example (forward and backward at batch 64" in squeezed
    assert "float32 2048x2048 on every core, 250.0 GFLOP/s" in squeezed
    assert "\ntf_mgpu 200.0 80%\n" in squeezed, squeezed
    assert "\n--help 0.25 0.25 <= 1 s PASS" in squeezed, squeezed
    tables.write(report, tmp_path)
    assert (tmp_path / "startup.csv").read_text().startswith("probe,command,runs,median_seconds")


def test_the_markdown_page_says_when_where_and_how_and_holds_the_printed_tables(tmp_path):
    from tf_mgpu.tools.benchmarks import markdown

    measurements = [fake("seed_torch", 0, 100.0), fake("tf_mgpu", 0, 400.0, wall_seconds=5.0)]
    report = {
        "command": "python -m tf_mgpu.bench --manual_dir=DIR --markdown=docs/benchmarks.md",
        "environment": {
            "date": "2026-11-25T10:00:00+00:00",
            "hostname": "vm",
            "cpu": "AMD EPYC",
            "bf16": "none",
            "cores": 2,
            "load_average": [0.5, 0.5, 0.5],
            "python": "3.11.7",
            "packages": {"tensorflow": "2.21.0"},
        },
        "settings": dataclasses.asdict(
            variants.Settings(manual_dir="DIR", data_dir=None, epochs=2)
        ),
        "rounds": 1,
        "table": figures.table_rows([variants.TABLE[0], variants.TABLE[2]], measurements),
        "scaling": [],
        "targets": [figures.evaluate(t, measurements) for t in variants.TARGETS],
        "failures": [],
    }
    report_file = tmp_path / "bench.json"
    report_file.write_text(json.dumps(report))
    page = tmp_path / "docs" / "benchmarks.md"
    assert markdown.main([str(report_file), str(page)]) == 0
    text = page.read_text()
    assert text.startswith(markdown.TITLE), text
    for expected in (
        "- date: 2026-11-25T10:00:00+00:00",
        "- machine: AMD EPYC, 2 cores (host vm)",
        f"- command: `{report['command']}`",
        "do not edit by hand",
        "tf_mgpu benchmark  2026-11-25T10:00:00+00:00  host vm",
        tables.format_report(report),
    ):
        assert expected in text, f"{expected!r} missing from:\n{text}"
