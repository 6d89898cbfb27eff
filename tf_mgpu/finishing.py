"""The end of a run, after its last epoch: what changed the weights after it, evaluated
again; the summary; the workers' agreement on the weights; the chief's outputs and exports.
"""

from collections.abc import Callable

from tf_mgpu import timing
from tf_mgpu.building import Run
from tf_mgpu.cluster import supervisor
from tf_mgpu.engine.control import actions, finalize
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.faults import liveness
from tf_mgpu.engine.step import replicas
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import export, report, summary


def after_callbacks(
    run: Run, history: list[dict], ending: finalize.Finalize, evaluate: Callable[[], dict]
) -> dict:
    """What changed the run's end after its last epoch, one line each: the optimizer's final
    weights (`use_ema`'s average), a callback's stop before the last epoch, and weights
    on_train_end set; the weights evaluated again (by `evaluate`). Returns those figures."""
    done = run.callbacks
    final = done.final if done is not None else {}
    if ending.changed:
        # Evaluated again unless on_train_end set the weights after it (and evaluated).
        final = final or evaluate()
        said = "" if done is not None and done.final else f"; evaluated again: {_shown(final)}"
        run.chief_print(
            f"tf_mgpu optimizer: {finalize.describe(run.trainer.state.optimizer)} at the "
            f"end, as Keras fit ends{said}",
            flush=True,
        )
    if done is None:
        return final
    if done.stopped_by:
        run.chief_print(
            f"tf_mgpu callbacks: {done.stopped_by} stopped training after epoch "
            f"{history[-1]['epoch']} of {run.config.epochs}",
            flush=True,
        )
    if done.final:
        run.chief_print(
            f"tf_mgpu callbacks: on_train_end set the weights (EarlyStopping's "
            f"restore_best_weights, say); evaluated again: {_shown(done.final)}",
            flush=True,
        )
    return final


def _shown(figures: dict) -> str:
    return "  ".join(f"{k} {v:.4f}" for k, v in figures.items() if "examples" not in k)


def finish(
    run: Run,
    history: list[dict],
    saving: actions.Checkpointing,
    final: dict,
    alive: liveness.Liveness,
) -> dict:
    """After the last epoch: the summary, the workers' agreement, the outputs and exports.
    Returns the summary.

    `final` holds test and validation figures that replace the last epoch's (the
    weights changed after it)."""
    strategy, node, config, trainer = run.strategy, run.node, run.config, run.trainer
    alive.ending(trainer.state.weight_bytes())
    facts = summary.summary(strategy, node, config, trainer, history)
    facts.update(final)
    if run.callbacks is not None:
        facts["stopped_by"] = run.callbacks.stopped_by
    facts["checkpoint_seconds"] = saving.seconds
    workers_agree = collectives.same_weights_everywhere(
        strategy, node.num_workers, facts["weights_sha256"]
    )
    collectives.finish_together(strategy)
    supervisor.notify("finishing")  # no collective is left: the export has no deadline
    try:
        with run.clock.phase("export"):
            run.outputs.weights(trainer.state.model)
        # The summary comes first, saying the export has not finished: an export that
        # fails (the user's get_config, say) loses nothing, and a rerun exports again.
        facts["exports"] = []
        facts["seconds"] = run.clock.breakdown()
        run.outputs.summary(facts)
        if run.outputs.model_dir is not None:  # the chief
            with run.clock.phase("export"):
                facts["exports"] = _export(trainer, run.outputs.model_dir)
            facts["seconds"] = run.clock.breakdown()
            # The peak so far was training's; the end of the run (its files) may raise it.
            facts["peak_host_memory_training_mib"] = facts["peak_host_memory_mib"]
            facts.update(report.memory_use())
            run.outputs.summary(facts)
    except OSError as e:
        raise UserError(
            saving.checkpoints.cannot_write(f"into --model_dir={config.model_dir}", e)
        ) from None
    run.chief_print(report.final_line(facts), flush=True)
    run.chief_print(report.weights_line(facts["weights_sha256"], workers_agree), flush=True)
    run.chief_print(
        f"{timing.line(facts['seconds'])}; calls: {trainer.pace.describe()}", flush=True
    )
    return facts


def export_unfinished(run: Run) -> None:
    """The exports the last run left unfinished (its export failed), made now by the chief."""
    if not run.outputs.export_unfinished():
        return
    with run.clock.phase("export"):
        paths = _export(run.trainer, run.outputs.model_dir)
    run.outputs.exported(paths)
    run.chief_print(
        f"tf_mgpu export: the last run's export had not finished; wrote {', '.join(paths)}",
        flush=True,
    )


def _export(trainer: Trainer, model_dir: str) -> list[str]:
    """The task's exports of the trained model (its layers as the task built them, not as
    --sync_batch_norm trained them); returns the paths written."""
    replicas.unsynchronize(trainer.synchronized)
    return (trainer.task.export or export.save)(trainer.state.model, model_dir)
