"""Resuming a run: --model_dir's newest checkpoint of this run restored, another run's
refused; or, when it already holds every epoch asked for, nothing left to train."""

import dataclasses

from tf_mgpu.building import Run
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import summary

# What a refused global batch adds: a run resumed on another worker count keeps it so.
_ELSEWHERE = " (on another worker count, with --batch_workers=<its worker count>)"


def resume(run: Run) -> list[dict]:
    """Restores the newest checkpoint if `config.model_dir` has one from this run.

    Returns the metrics of the epochs already done. Refuses a model dir that
    holds another run, or outputs without checkpoints.
    """
    strategy, config, trainer = run.strategy, run.config, run.trainer
    checkpoints, outputs, logs, flagfile = run.checkpoints, run.outputs, run.logs, run.flagfile
    current = checkpoint.fingerprint(
        trainer.state.model.weights,
        train_examples=trainer.train_examples,
        seed=config.seed,
        global_batch=trainer.global_batch,
        recipe=dataclasses.asdict(config),
    )
    saved = checkpoints.saved_fingerprint()
    if saved is not None:
        why = checkpoint.incompatibility(saved, current)
        if why:
            raise UserError(
                f"--model_dir={config.model_dir} holds a run with {why}; rerun with that "
                f"run's flags (its flags.txt) to resume it"
                + (_ELSEWHERE if saved.get("global_batch") != trainer.global_batch else "")
                + ", pass --clean to start over there, or choose another --model_dir"
            )
    restored = checkpoints.restore()
    if restored is None:
        if outputs.has_outputs():
            raise UserError(
                f"--model_dir={config.model_dir} holds another run's outputs but no "
                f"checkpoints to resume; pass --clean to start over there, or choose "
                f"another --model_dir"
            )
        checkpoints.record(current)
        outputs.begin(flagfile)
        logs.begin(summary.hparams(config, trainer, strategy), trainer.state.train_sums.names()[1:])
        collectives.check_same_start(strategy, trainer.step())
        return []
    trainer.state.train_sums.restored()
    collectives.check_same_start(strategy, trainer.step())
    epoch, step = trainer.position()
    if not 0 <= step <= trainer.train_steps:
        raise UserError(
            f"checkpoint {restored} is at step {trainer.step()} of epoch {epoch + 1}, which "
            f"does not fit {trainer.train_steps} steps per epoch; pass --clean to start over"
        )
    changed = checkpoint.changes(saved or {}, current)
    run.chief_print(
        f"tf_mgpu resume: from {restored} (step {trainer.step():,}: epoch {epoch + 1}, step "
        f"{step} of {trainer.train_steps})"
        + (f"; {checkpoints.resumed_input}" if checkpoints.resumed_input and step else "")
        + (f"; changed: {', '.join(changed)}" if changed else ""),
        flush=True,
    )
    checkpoints.record(current)
    logs.resume(trainer.step())
    # An epoch a callback stopped mid-way was evaluated and recorded: keep its record.
    stopped = bool(run.callbacks and run.callbacks.stopped_before())
    return outputs.resume(epoch + (1 if stopped and step > 0 else 0), flagfile)


def nothing_to_train(run: Run) -> str | None:
    """The chief's line when the restored run has nothing left to train: every epoch asked
    for is done, or a callback stopped it (model.stop_training); None otherwise."""
    epoch, _ = run.trainer.position()
    stopped_by = run.callbacks.stopped_before() if run.callbacks else None
    if epoch < run.config.epochs and not stopped_by:
        return None
    why = (
        f"training was stopped by {stopped_by} (model.stop_training)"
        if stopped_by
        else f"raise --epochs to train on (--epochs={run.config.epochs})"
    )
    return (
        f"tf_mgpu done: --model_dir={run.config.model_dir} already holds {epoch} epochs; "
        f"nothing to train: {why}. Pass --clean to start over"
    )
