"""The benchmark's selection: what runs by default, --only, another task, bad names."""

import pytest

from tf_mgpu.errors import UserError
from tf_mgpu.tools.benchmarks import runner, variants

TABLE_NAMES = [variant.name for variant in variants.TABLE]


def test_everything_runs_by_default_with_shared_references_once():
    plan = variants.select(None, [128, 512, 2048])
    scaling, targets = plan.scaling, plan.targets
    names = [variant.name for variant in plan.variants]
    assert names[: len(TABLE_NAMES)] == TABLE_NAMES, names
    assert len(names) == len(set(names)), f"a variant runs twice per round: {names}"
    assert {"mirrored_2x64", "single_128", "one_device", "mwms_2x256", "single_2048"} <= set(names)
    assert plan.probes == ["startup", "compute"]
    expected = ["single_128", "single_128_nojit", "one_device", "single_128", "single_512"]
    expected.append("single_2048")
    assert [pair.b for pair in scaling] == expected
    bounds = {(t.a, t.b, t.figure): (t.op, t.bound) for t in targets}
    assert bounds == {
        ("tf_mgpu", "seed_torch", "steady_examples_per_second"): (">=", 3.0),
        ("tf_mgpu", "keras_fit", "steady_examples_per_second"): (">=", 7.0),
        ("tf_mgpu", "seed_torch", "wall_seconds"): ("<=", 0.5),
        ("tf_mgpu_cold", "seed_torch", "wall_seconds"): ("<=", 0.7),
        ("tf_mgpu", "tf_mgpu_loop500", "steady_examples_per_second"): (">=", 0.97),
        ("tf_mgpu", "tf_mgpu_all_off", "test_accuracy"): ("±", 0.5),
        ("tf_mgpu", "seed_torch", "test_accuracy"): ("±", None),
        ("mirrored_2x64", "single_128", "steady_examples_per_second"): (">=", 0.8),
        ("tf_mgpu", "one_device", "steady_examples_per_second"): (">=", 0.8),
        ("mwms_2x256", "single_512", "steady_examples_per_second"): (">=", 0.5),
    }


def test_only_selects_variants_and_pairs_with_the_targets_they_can_answer():
    plan = variants.select(["seed_torch", "tf_mgpu", "mirroring", "startup"], [])
    assert [v.name for v in plan.variants] == [
        "seed_torch",
        "tf_mgpu",
        "mirrored_2x64",
        "single_128",
    ]
    assert [pair.a for pair in plan.scaling] == ["mirrored_2x64"]
    assert "keras_fit" not in {t.b for t in plan.targets}, plan.targets
    assert len(plan.targets) == 4, plan.targets
    assert plan.probes == ["startup"]


def test_another_task_runs_keras_fit_of_it_and_three_xla_choices_and_passes_the_task(tmp_path):
    plan = variants.select(None, [], task="examples/convnet_task.py")
    chosen, targets = plan.variants, plan.targets
    names = [variant.name for variant in chosen]
    assert names[:4] == ["keras_fit_task", "tf_mgpu", "tf_mgpu_jit", "tf_mgpu_nojit"], names
    assert not set(names) & {"seed_torch", "keras_fit", "xla_floor"}, names
    assert {(t.label, t.op, t.bound) for t in targets} >= {
        ("steady ex/s, tf_mgpu / keras_fit_task", ">=", 1.8),
        ("end-to-end wall, tf_mgpu / keras_fit_task", "<=", 0.65),
        ("steady ex/s, auto / XLA forced", ">=", 0.9),
        ("steady ex/s, auto / no XLA", ">=", 0.9),
    }
    settings = variants.Settings(manual_dir="/m", task="examples/convnet_task.py")
    for variant in chosen:
        command = runner.command(variant, settings, tmp_path)
        assert "--task=examples/convnet_task.py" in command, command
        if variant.main_args is not None:  # never a resume of an earlier bench's run
            assert "--clean" in command, command


@pytest.mark.parametrize(
    ("only", "batches", "message"),
    [(["tf_mgpu", "nope"], [], "unknown nope"), (None, [100, 33], "33 is not an even")],
)
def test_bad_selections_are_user_errors_naming_the_value(only, batches, message):
    with pytest.raises(UserError, match=message):
        variants.select(only, batches)


def test_a_task_bench_sets_bf16_against_float32_and_bounds_it_only_with_amx():
    names = ["tf_mgpu", "tf_mgpu_bf16", "keras_fit_task", "keras_fit_task_bf16"]
    for bf16, bound in (("AMX", 1.8), ("AVX512_BF16", None), ("none", None)):
        plan = variants.select(names, [128], task="mnist_cnn", bf16=bf16)
        ratios = {t.label: t for t in plan.targets}
        own = ratios["steady ex/s, tf_mgpu bf16 / float32"]
        assert (own.a, own.b, own.bound) == ("tf_mgpu_bf16", "tf_mgpu", bound), bf16
        against_fit = ratios["steady ex/s, tf_mgpu bf16 / keras_fit_task bf16"]
        assert (against_fit.op, against_fit.bound) == (">=", 1.0)
        assert "test accuracy, tf_mgpu bf16 - float32" in ratios


@pytest.mark.parametrize(
    ("flags", "support"),
    [
        ("fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile", "AMX"),
        ("fpu avx2 avx512f avx512_bf16", "AVX512_BF16"),
        ("fpu avx2 fma", "none"),
    ],
)
def test_the_cpus_bf16_support_is_read_from_its_flags(tmp_path, flags, support):

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n")
    assert runner.bf16_support(str(cpuinfo)) == support
    assert runner.bf16_support(str(tmp_path / "absent")) == "none"
