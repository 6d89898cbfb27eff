"""The behaviours README promises, each broken once, and the test that must then fail.

Each old text must occur exactly once in its file (the runner refuses it
otherwise), so when the code moves this table fails loudly instead of
silently testing nothing. Node ids are relative to the repository root.
"""

from tests.mutate.runner import Mutation

MUTATIONS = (
    Mutation(
        behaviour="each replica trains on its own share of the global batch",
        what="every replica reads the first run of the step's batch",
        path="tf_mgpu/engine/input/share.py",
        old="    start = step * global_batch + replica * per_replica\n",
        new="    start = step * global_batch + 0 * replica * per_replica\n",
        tests=(
            "tests/engine/input/test_share.py::test_every_pipelines_replicas_tile_each_global_batch_once_in_order",
            "tests/test_training_tasks.py::test_two_replicas_train_like_one_device_in_float64[mnist_mlp]",
        ),
    ),
    Mutation(
        behaviour="workers agree on the weights (sha256 all-reduce)",
        what="a difference never raises",
        path="tf_mgpu/engine/distribute/collectives.py",
        old="        same = all(self._count * sq == s * s for s, sq in zip(",
        new="        same = True or all(self._count * sq == s * s for s, sq in zip(",
        tests=("tests/test_main.py::test_workers_that_end_with_different_weights_fail_saying_so",),
    ),
    Mutation(
        behaviour="a killed run resumes to the same weights",
        what="a resumed epoch restarts at its first step",
        path="tf_mgpu/engine/step/trainer.py",
        old="        return epoch, self.step() - epoch * self.train_steps",
        new="        return epoch, 0",
        tests=(
            "tests/engine/state/test_checkpoint.py::test_one_process_killed_mid_epoch_resumes_bit_for_bit",
        ),
    ),
    Mutation(
        behaviour="the launcher never restarts exits 2, 3, 4, 75",
        what="exit 4 (diverged) restarted",
        path="tf_mgpu/cluster/launcher.py",
        old=(
            '    errors.EXIT_DIVERGED: "the same checkpoint at the same learning rate '
            'diverges again",\n'
        ),
        new="",
        tests=(
            "tests/cluster/test_launcher.py::test_failures_that_would_recur_are_not_restarted"
            "[4-the same checkpoint at the same learning rate diverges again]",
        ),
    ),
    Mutation(
        behaviour="N replicas train like one device (loss over the global batch)",
        what="each replica's loss not divided among the replicas",
        path="tf_mgpu/engine/step/replica_steps.py",
        old="        loss = compute_loss(model, x, y, y_pred, w, training=True)\n",
        new="        loss = reported(compute_loss(model, x, y, y_pred, w, training=True))\n",
        tests=(
            "tests/test_training.py::test_n_replicas_train_like_one_replica_at_the_same_global_batch"
            "[mirrored_2cpu-float64-2-1e-10]",
        ),
    ),
    Mutation(
        behaviour="a tf.data split is read each epoch, never held",
        what="the dataset cached",
        path="tf_mgpu/engine/input/stream.py",
        old="    return Stream(dataset, length, nonfinite,",
        new="    return Stream(dataset.cache(), length, nonfinite,",
        tests=(
            "tests/engine/input/test_stream.py::"
            "test_training_reads_the_dataset_each_epoch_instead_of_holding_it",
        ),
    ),
    Mutation(
        behaviour="SIGTERM saves a checkpoint at the next call boundary",
        what="the stop's save skipped (the last periodic one stands)",
        path="tf_mgpu/engine/control/actions.py",
        old="            self._saving.save()\n            self._halt()",
        new="            self._halt()",
        tests=(
            "tests/engine/faults/test_stopping.py::"
            "test_a_signal_during_training_saves_stops_and_the_rerun_resumes[sigterm]",
        ),
    ),
    Mutation(
        behaviour="a broken task file is one line naming it",
        what="a task without build_model() not checked",
        path="tf_mgpu/tasks/adapter.py",
        old="        if not callable(getattr(module, function, None)):",
        new="        if False:",
        tests=(
            "tests/tasks/test_adapter.py::test_a_bad_task_is_one_line_naming_the_file[no_build_model]",
        ),
    ),
    Mutation(
        behaviour="each replica draws its own dropout masks",
        what="every replica on one stream",
        path="tf_mgpu/engine/state/training_state.py",
        old="    shift = tf.stack([replica * _STREAM_STRIDE, tf.constant(0, tf.int64)])",
        new="    shift = tf.stack([replica * 0, tf.constant(0, tf.int64)])",
        tests=(
            "tests/engine/state/test_training_state.py::"
            "test_each_replica_draws_its_own_masks_from_the_state_one_device_would_have",
        ),
    ),
    Mutation(
        behaviour="training's test metrics count padding for nothing",
        what="the padded last step's padding counted as examples",
        path="tf_mgpu/engine/input/share.py",
        old="    return max(0, min(per_replica, last - replica * per_replica))",
        new="    return per_replica",
        tests=(
            "tests/keras/test_data_and_metrics.py::"
            "test_stateful_metrics_are_exact_across_replicas_and_equal_keras_evaluate",
        ),
    ),
    Mutation(
        behaviour="the evaluate command counts every example once",
        what="the last, padded, batch skipped",
        path="tf_mgpu/engine/step/loop.py",
        old="    if last is not None and (count == 0 or end == total):",
        new="    if last is not None and count == 0:",
        tests=("tests/test_evaluate.py::test_every_example_counts_once_on_four_replicas",),
    ),
    Mutation(
        behaviour="weighted_metrics take the sample weights",
        what="the sample weights not given to the metrics",
        path="tf_mgpu/engine/step/replica_steps.py",
        old="        sums.measure(x, keras_labels(y), y_pred, w)",
        new="        sums.measure(x, keras_labels(y), y_pred, None)",
        tests=(
            "tests/keras/test_weighted_metrics.py::"
            "test_weighted_and_unweighted_metrics_equal_keras_evaluate_on_two_replicas",
        ),
    ),
    Mutation(
        behaviour="every JSON file is strict JSON",
        what="NaN written as NaN",
        path="tf_mgpu/strict_json.py",
        old="    return json.dumps(finite(value), allow_nan=False, **kwargs)",
        new="    return json.dumps(value, **kwargs)",
        tests=("tests/test_strict_json.py::test_non_finite_numbers_become_null_at_any_depth",),
    ),
    Mutation(
        behaviour="workers that restored different checkpoints refuse to train",
        what="the start steps compared, a difference ignored",
        path="tf_mgpu/engine/distribute/collectives.py",
        old="    if _spread(strategy, here) != 0:",
        new="    if _spread(strategy, here) is None:",
        tests=(
            "tests/engine/distribute/test_collectives.py::"
            "test_workers_that_restore_different_checkpoints_refuse_to_train",
        ),
    ),
    Mutation(
        behaviour="the newest 3 checkpoints are kept",
        what="4 kept",
        path="tf_mgpu/engine/state/checkpoint.py",
        old="KEEP = 3  #",
        new="KEEP = 4  #",
        tests=(
            "tests/engine/state/test_checkpoint.py::"
            "test_a_run_keeps_the_newest_three_checkpoints_by_default",
        ),
    ),
    Mutation(
        behaviour="a metric of the user's own reports what one device reports",
        what="its replicas' states summed, not the gathered one read",
        path="tf_mgpu/engine/model/metrics.py",
        old=(
            "            found = {key: value if key in summed else first[key] "
            "for key, value in found.items()}"
        ),
        new="            found = dict(found)",
        tests=(
            "tests/engine/model/test_metrics.py::"
            "test_a_metric_of_the_users_own_is_gathered_and_resumes_on_another_layout",
        ),
    ),
    Mutation(
        behaviour="check names randomness outside Keras's seeded ops",
        what="two differing traces not reported",
        path="tf_mgpu/tools/equivalence/report.py",
        old="    if facts.retrace_differs:",
        new="    if False:",
        tests=("tests/test_check.py::test_randomness_outside_keras_is_named",),
    ),
    Mutation(
        behaviour="check names an add_loss term reduced per replica",
        what="no cause when the forward pass agrees",
        path="tf_mgpu/tools/equivalence/report.py",
        old="    if not found:\n",
        new="    if False:\n",
        tests=(
            "tests/test_check.py::test_an_add_loss_term_reduced_over_the_replica_batch_is_named",
        ),
    ),
    Mutation(
        behaviour="user errors that need no TensorFlow come before it loads",
        what="the preflight imports TensorFlow",
        path="tf_mgpu/cluster/startup_checks.py",
        old="import os\n",
        new="import os\n\nimport tensorflow  # noqa: F401\n",
        tests=(
            "tests/test_main.py::test_user_errors_that_need_no_tensorflow_come_before_it_loads",
        ),
    ),
    Mutation(
        behaviour="tf_mgpu.train names an unknown setting",
        what="settings not checked",
        path="tf_mgpu/api.py",
        old="    unknown = sorted(set(settings) - fields)",
        new="    unknown = []",
        tests=(
            "tests/test_api.py::"
            "test_an_unknown_setting_is_a_user_error_naming_it_before_tensorflow_loads",
        ),
    ),
    Mutation(
        behaviour="survivors of a lost peer exit 6 naming it",
        what="the peer's error raised as it came",
        path="tf_mgpu/failures.py",
        old="        raise PeerLost(_lost_peer(e, node, checkpoints)) from None",
        new="        raise",
        tests=(
            "tests/cluster/test_supervisor.py::"
            "test_three_workers_lose_the_chief_and_the_others_end_in_time",
        ),
    ),
    Mutation(
        behaviour="flags/accuracy97.cfg reaches 97%",
        what="the preset's rate 0.01",
        path="flags/accuracy97.cfg",
        old="--learning_rate=0.1\n",
        new="--learning_rate=0.01\n",
        tests=("tests/test_main.py::test_the_accuracy97_preset_reaches_97_percent",),
    ),
)
