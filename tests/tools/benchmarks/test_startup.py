"""The start-up probes: real processes answering without TensorFlow, timed, and their verdicts."""

import dataclasses

import pytest

from tf_mgpu.tools.benchmarks import startup


def probe(name: str) -> startup.Probe:
    return next(p for p in startup.PROBES if p.name == name)


@pytest.mark.parametrize("name", ["help", "tf_config", "manual_dir"])
def test_a_probe_runs_a_real_process_that_gives_its_own_answer(tmp_path, name):
    timed = startup.run(probe(name), 2, tmp_path)  # ProbeError on another code or line
    assert (timed.probe, timed.round) == (name, 2)
    assert timed.seconds > 0, timed


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"code": 0}, r"--batch_size=0: exit 2, expected 0 and 'flag --batch_size=0'"),
        ({"says": "some other line"}, r"exit 2, expected 2 and 'some other line'"),
    ],
    ids=["code", "line"],
)
def test_a_probe_answering_otherwise_fails_naming_what_it_expected(tmp_path, change, expected):
    wrong = dataclasses.replace(probe("flag_value"), **change)
    with pytest.raises(startup.ProbeError, match=expected):
        startup.run(wrong, 0, tmp_path)


def test_the_summary_takes_the_median_over_rounds_against_one_second():
    timed = [
        startup.Timed("help", 0, 0.3),
        startup.Timed("help", 1, 2.0),
        startup.Timed("help", 2, 0.4),
        startup.Timed("tf_config", 0, 1.2),
    ]
    rows = {row["probe"]: row for row in startup.summary(timed)}
    assert sorted(rows) == ["help", "tf_config"]
    assert (rows["help"]["median_seconds"], rows["help"]["max_seconds"]) == (0.4, 2.0)
    assert (rows["help"]["result"], rows["tf_config"]["result"]) == ("PASS", "MISS")
    assert rows["tf_config"]["command"] == "TF_CONFIG='not json'"
