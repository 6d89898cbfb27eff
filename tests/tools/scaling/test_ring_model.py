"""The scaling model's arithmetic, and the all-reduce measurement in a real process."""

import subprocess
import sys

import pytest

from tests import support
from tf_mgpu.tools.scaling import ring_model

LINK = ring_model.Link("test link", bandwidth=1e9, hop_latency=1e-5)
COMPUTE = ring_model.Compute(step_overhead=1e-4, per_example=1e-6, source="test")


def test_the_gradient_is_the_seed_models():
    assert ring_model.PARAMETERS == 101_770
    assert ring_model.GRADIENT_BYTES == 407_080
    assert ring_model.BF16_GRADIENT_BYTES == ring_model.GRADIENT_BYTES // 2


def test_one_replica_communicates_nothing():
    assert LINK.allreduce_seconds(1, ring_model.GRADIENT_BYTES) == 0


def test_two_replicas_send_the_bytes_once_and_pay_two_ring_steps():
    expected = 407_080 / 1e9 + 2 * 1e-5
    assert LINK.allreduce_seconds(2, 407_080) == pytest.approx(expected)


def test_ring_bandwidth_term_approaches_twice_the_bytes():
    bandwidth_only = ring_model.Link("no latency", bandwidth=1e9, hop_latency=0)
    assert bandwidth_only.allreduce_seconds(1000, 10**9) == pytest.approx(2 * 999 / 1000)


def test_allreduce_grows_with_replicas_and_bytes():
    for link in (ring_model.NVLINK, ring_model.PCIE, *ring_model.ETHERNET):
        times = [link.allreduce_seconds(n, ring_model.GRADIENT_BYTES) for n in range(1, 65)]
        assert times == sorted(times), link.name
        assert link.allreduce_seconds(8, ring_model.BF16_GRADIENT_BYTES) < times[7], link.name


def test_faster_links_predict_higher_efficiency():
    slow, fast = ring_model.ETHERNET[0], ring_model.ETHERNET[-1]
    for n in ring_model.HOSTS:
        assert fast.allreduce_seconds(n, 407_080) < slow.allreduce_seconds(n, 407_080), n


def test_efficiency_rises_with_batch_and_falls_with_replicas():
    setting = ring_model.Setting("test", COMPUTE, (1, 2, 4, 8), LINK.allreduce_seconds)
    batches = [32, 64, 128, 256, 512]
    by_key = {(p.replicas, p.per_replica_batch): p for p in ring_model.predict(setting, batches)}
    for n in (1, 2, 4, 8):
        effs = [by_key[n, b].efficiency for b in batches]
        assert effs == sorted(effs), (n, effs)
    for b in batches:
        effs = [by_key[n, b].efficiency for n in (1, 2, 4, 8)]
        assert effs == sorted(effs, reverse=True), (b, effs)
        assert by_key[1, b].efficiency == 1.0
    p = by_key[4, 128]
    expected_step = COMPUTE.seconds(128) + LINK.allreduce_seconds(4, 407_080)
    assert p.step_seconds == pytest.approx(expected_step)
    assert p.examples_per_second == pytest.approx(4 * 128 / p.step_seconds)
    assert p.efficiency_bf16 > p.efficiency


def test_break_even_is_the_first_batch_at_half_efficiency():
    allreduce = LINK.allreduce_seconds(4, ring_model.GRADIENT_BYTES)
    batch = ring_model.break_even_batch(COMPUTE, allreduce)
    # compute(b) >= allreduce: 1e-4 + b * 1e-6 >= allreduce.
    assert batch == pytest.approx((allreduce - 1e-4) / 1e-6, abs=1)
    assert ring_model.efficiency(COMPUTE.seconds(batch), allreduce) >= 0.5
    assert ring_model.efficiency(COMPUTE.seconds(batch - 1), allreduce) < 0.5


def test_break_even_is_one_when_communication_is_cheaper_than_any_step():
    assert ring_model.break_even_batch(COMPUTE, allreduce_seconds=1e-6) == 1


def test_break_even_rows_cover_every_multi_replica_count():
    rows = ring_model.break_even_rows(ring_model.assumed_settings())
    assert {(r["setting"], r["replicas"]) for r in rows} == {
        (s.name, n) for s in ring_model.assumed_settings() for n in s.replicas if n > 1
    }
    for r in rows:
        assert r["break_even_batch_bf16"] <= r["break_even_batch"], r


def test_fit_compute_recovers_overhead_and_per_example_time():
    points = [(b, 2e-4 + b * 3e-6) for b in (32, 64, 128, 256)]
    fitted = ring_model.fit_compute(points, "test")
    assert fitted.step_overhead == pytest.approx(2e-4)
    assert fitted.per_example == pytest.approx(3e-6)


def test_fit_compute_goes_through_the_origin_for_one_batch_size():
    fitted = ring_model.fit_compute([(64, 6.4e-3)], "test")
    assert (fitted.step_overhead, fitted.per_example) == (0.0, pytest.approx(1e-4))
    with pytest.raises(ValueError, match="no 1-replica measurement"):
        ring_model.fit_compute([], "test")


def test_measured_inputs_feed_the_prediction():
    cheap, dear = (
        ring_model.measured_settings(COMPUTE, {"multi_worker_mirrored": seconds})[0]
        for seconds in (1e-4, 3e-3)
    )
    assert cheap.name == ring_model.MEASURED["multi_worker_mirrored"]
    [p_cheap], [p_dear] = ring_model.predict(cheap, [64]), ring_model.predict(dear, [64])
    assert (p_cheap.replicas, p_dear.replicas) == (2, 2)
    assert p_dear.step_seconds == pytest.approx(COMPUTE.seconds(64) + 3e-3)
    assert p_dear.efficiency < p_cheap.efficiency
    assert p_dear.efficiency_bf16 is None, "a measured all-reduce says nothing about bf16"


def test_tables_show_every_prediction_and_assumption():
    settings = ring_model.assumed_settings()
    predictions = [p for s in settings for p in ring_model.predict(s, [64])]
    text = ring_model.prediction_table(predictions)
    assert len(text.splitlines()) == 1 + len(predictions)
    assumptions = ring_model.assumptions_text(COMPUTE)
    for link in (ring_model.NVLINK, ring_model.PCIE, *ring_model.ETHERNET):
        assert link.name in assumptions
    assert "assumed" in assumptions
    assert "CPU compute here (test)" in assumptions


def test_mirrored_allreduce_is_timed_in_its_own_process():
    command = [sys.executable, "-m", "tf_mgpu.sweep", "--measure_allreduce=mirrored"]
    done = subprocess.run(
        [*command, "--allreduce_calls=3", "--allreduce_per_call=2"],
        cwd=support.ROOT,
        env=support.environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = ring_model.parse_allreduce_line(done.stdout)
    assert result is not None, done.stderr[-3000:]
    assert (result["replicas"], result["bytes"], result["calls"]) == (2, 407_080, 3)
    assert 0 < result["min_seconds"] <= result["median_seconds"] <= result["max_seconds"] < 1
