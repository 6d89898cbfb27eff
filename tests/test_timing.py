"""The wall-time breakdown: every second in one phase, the parts summing to the total."""

import time

from tf_mgpu import timing


def test_the_parts_add_up_to_the_total_and_unclaimed_time_is_other():
    clock = timing.Phases()
    time.sleep(0.02)
    clock.mark("import")  # everything so far
    with clock.phase("data"):
        time.sleep(0.02)
    started = time.monotonic()
    time.sleep(0.05)
    clock.add("train", time.monotonic() - started)  # measured elsewhere, as the loop does
    time.sleep(0.02)  # nobody's: other
    parts = clock.breakdown()
    assert list(parts) == [*timing.PHASES, "other", "total"]
    assert parts["import"] >= 0.02
    assert parts["data"] >= 0.02
    assert parts["train"] >= 0.05
    assert parts["other"] >= 0.02, parts
    assert abs(sum(v for k, v in parts.items() if k != "total") - parts["total"]) < 0.01


def test_a_clock_from_the_process_start_counts_the_time_before_it_was_made():
    assert timing.Phases(since_process_start=True).breakdown()["total"] >= 0.01
    assert 0 < timing.process_age() < 24 * 3600


def test_the_line_names_the_phases_that_took_time():
    parts = {name: 0.0 for name in timing.PHASES} | {"import": 5.04, "train": 3.0, "other": 0.01}
    parts["total"] = 8.06
    assert timing.line(parts) == "tf_mgpu time: 8.1 s = import 5.0 + train 3.0"
