"""What a run says before its first step: the start line (every worker's), then the chief's
lines on how the splits are read, the model's own steps, what makes its replicas differ from
one device, and the examples each epoch drops."""

from tf_mgpu.building import Run
from tf_mgpu.engine.model.own_steps import overridden
from tf_mgpu.engine.step import replica_state, replicas
from tf_mgpu.outputs import report


def say(run: Run) -> None:
    """Prints the lines, in that order."""
    trainer, config = run.trainer, run.config
    print(
        report.start_line(
            run.strategy,
            str(run.node),
            config,
            trainer.global_batch,
            trainer.task.name,
            trainer.jit.describe(),
            trainer.placement.describe(),
            accumulation_from_optimizer=trainer.state.optimizer_accumulation is not None,
        ),
        flush=True,
    )
    for line in report.input_lines(
        trainer.datasets,
        config.stream_shard,
        run.multi_worker,
        global_batch=trainer.global_batch,
        eval_batch=trainer.eval_batch,
    ):
        run.chief_print(line, flush=True)
    _own_steps(run)
    for differs in (
        replicas.synchronized_line(trainer.synchronized, run.strategy.num_replicas_in_sync),
        replicas.warning(trainer.state.model, run.strategy.num_replicas_in_sync, config.batch_size),
        replica_state.describe(
            trainer.state.model,
            trainer.state.per_replica,
            run.strategy.num_replicas_in_sync,
            config.batch_size,
        ),
    ):
        if differs:
            run.chief_print(differs, flush=True)
    dropped = trainer.train_examples - trainer.train_steps * trainer.global_batch
    if dropped > 0.05 * trainer.train_examples:
        run.chief_print(report.dropped_line(dropped, trainer.train_examples, trainer.global_batch))


def _own_steps(run: Run) -> None:
    """The model's own steps, which run as Keras runs them, and what its test metrics are."""
    trainer = run.trainer
    own = overridden(trainer.state.model)
    if own:
        run.chief_print(
            f"tf_mgpu step: {', '.join(own)} run on each replica as Keras fit and evaluate run "
            f"them (how a loss is reduced over replicas is theirs); "
            + (
                "test metrics are the model's own (its test_step)"
                if trainer.state.own_eval
                else "test metrics are the compiled loss and metrics"
                if trainer.evaluates
                else "the test split is not evaluated: the model has no test_step of its own, "
                "and no call() with a compiled loss or add_loss, so Keras's evaluate could not "
                "score it"
            ),
            flush=True,
        )
