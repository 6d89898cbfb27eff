"""The assembly: flags' Config and a task in, a trained, checkpointed, exported model out.

A custom loop, not `model.fit`: Keras 3's `fit` fails under
MultiWorkerMirroredStrategy (keras-team/keras#20585), while `strategy.run`
inside `tf.function` works the same on one device, N GPUs and N machines.
The engine (`tf_mgpu.engine`) owns the step maths and every collective;
the task (`tf_mgpu.tasks`) supplies the compiled model and the data.

`run` reads as the run's phases (docs/design.md, "How a step flows through them"): the
parts built before the first step (`tf_mgpu.building`), resuming (`tf_mgpu.resuming`),
the start lines (`tf_mgpu.start_lines`), the epochs under the controller (here), and the
end: evaluation again, summary, exports (`tf_mgpu.finishing`).
"""

import dataclasses

import keras
import tensorflow as tf

from tf_mgpu import building, failures, finishing, resuming, start_lines, timing
from tf_mgpu.building import Run
from tf_mgpu.config import Config
from tf_mgpu.engine.control import actions, controller, finalize
from tf_mgpu.engine.distribute import agreement, collectives
from tf_mgpu.engine.faults import liveness, stopping
from tf_mgpu.engine.input.data import Data
from tf_mgpu.engine.model import unseeded
from tf_mgpu.engine.state.training_state import TrainState
from tf_mgpu.outputs import progress, reporting, tensorboard


@dataclasses.dataclass(frozen=True)
class Result:
    """What `run` returns: the summary the chief writes, and the trained state."""

    summary: dict
    state: TrainState


def run(
    config: Config,
    task=None,
    *,
    strategy: tf.distribute.Strategy | None = None,
    datasets: Data | None = None,
    flagfile: str | None = None,
    stop: stopping.Stop | None = None,
    clock: timing.Phases | None = None,
    splits_given: bool = False,
) -> Result | None:
    """Trains and evaluates `task` for `config.epochs`, resuming from `config.model_dir`.

    `task` is a --task string, a module or an object (see `tf_mgpu.tasks`);
    None means `config.task`. `strategy` and `datasets` replace the ones
    built from `config` (tests use this). `flagfile` is the text of a
    flagfile that replays the run; the chief writes it into
    `config.model_dir` with the other outputs. `stop` carries SIGTERM/SIGINT
    requests (see `tf_mgpu.engine.faults.stopping`). `clock` times the run's phases
    (default: from this call). `splits_given`: --train_split or --test_split was on
    the command line (refused for a task that cannot read them). Returns None when the
    model dir already holds every epoch asked for.
    """
    floatx = keras.config.floatx()  # a float64 run sets it (see state.create_state)
    try:
        return _run(config, task, strategy, datasets, flagfile, stop, clock, splits_given)
    finally:
        keras.config.set_floatx(floatx)
        unseeded.end()  # made under this run's strategy


def _run(config, task, strategy, datasets, flagfile, stop, clock, splits_given):
    stop = stop or stopping.Stop()
    clock = clock or timing.Phases()
    node, outputs = building.find_place(config)
    stated_batch = config.batch_size
    config = building.batch_for(config, node)
    with clock.phase("build"):
        if strategy is None:  # before the task file runs: it may create TensorFlow objects
            building.prepare_devices(config)
        work, config = building.load_task(config, task, stated_batch, splits_given)
        if strategy is None:
            strategy = building.join(config, node)
        stop.start_training()
    if datasets is None:
        with clock.phase("data"):
            datasets = building.load_splits(work, config)
    config = building.input_for(config, work, datasets)
    with clock.phase("build"):
        trainer, config, keras_callbacks = building.build_trainer(strategy, config, work, datasets)
    if config.clean:  # once the task checked out: a broken one loses nothing
        with stop.deferred():
            outputs.clean()
    collectives.barrier(strategy)  # no peer reads checkpoints the chief is deleting
    checkpoints = building.checkpoints_for(trainer, config, node, keras_callbacks)
    logs = tensorboard.Summaries(config.model_dir if node.is_chief else None)
    try:
        return _train(
            Run(
                strategy=strategy,
                node=node,
                config=config,
                trainer=trainer,
                checkpoints=checkpoints,
                outputs=outputs,
                logs=logs,
                stop=stop,
                flagfile=flagfile,
                clock=clock,
                callbacks=keras_callbacks,
            )
        )
    finally:
        logs.close()


def _train(run: Run) -> Result | None:
    """`run` once the cluster, the data and the state exist: resume, train, save, export."""
    with run.clock.phase("build"), run.stop.deferred():
        history = resuming.resume(run)
    done = resuming.nothing_to_train(run)
    if done:
        finishing.export_unfinished(run)  # the chief, after an export that failed
        run.chief_print(done, flush=True)
        return None
    start_lines.say(run)
    alive = liveness.Liveness()
    with failures.as_one_line(run.config, run.trainer, run.checkpoints, run.node):
        _compile(run, alive)
        control, saving, ending = _epochs(run, history, alive)
        control.run()
        # The end of the run holds collectives too: each under its own word (`liveness`),
        # an evaluation in agreed calls that a signal stops as any other, one line per fault.
        final = finishing.after_callbacks(run, history, ending, control.evaluate)
        if final:  # the weights changed after the last save: a rerun and evaluate see them
            saving.save(again=True)  # counted in saving.seconds, added below
        run.clock.add("train", run.trainer.call_seconds)
        run.clock.add("evaluate", run.trainer.eval_seconds)
        run.clock.add("checkpoint", saving.seconds)
        facts = finishing.finish(run, history, saving, final, alive)
        return Result(summary=facts, state=run.trainer.state)


def _compile(run: Run, alive: liveness.Liveness) -> None:
    """Traces and compiles the training and evaluation calls (`Trainer.compile`), timed."""
    # Compiling changes nothing: no deadline holds, and a signal ends the run at once.
    alive.compiling()
    run.stop.compiling()
    compile_seconds = run.trainer.compile()
    run.clock.add("compile", compile_seconds)
    alive.compiled()
    run.stop.training()


def _epochs(
    run: Run, history: list[dict], alive: liveness.Liveness
) -> tuple[controller.Controller, actions.Checkpointing, finalize.Finalize]:
    """The controller of the epochs, with its checkpointing and its optimizer's finalize
    (what the end of the run reads): after each call the workers agree, then it runs the
    actions in order."""
    trainer, config = run.trainer, run.config
    saving = actions.Checkpointing(
        trainer,
        run.checkpoints,
        config.checkpoint_steps,
        config.checkpoint_secs,
        liveness=alive,
        strategy=run.strategy,
    )
    agreed = _agreement(run, saving)
    saving.agreement = agreed
    curve = reporting.TrainingCurve(trainer, run.logs, config.log_steps)
    bar = progress.Progress(enabled=run.node.is_chief)
    keras_callbacks = [run.callbacks] if run.callbacks else []
    ending = finalize.Finalize(trainer, run.strategy)
    # The order is load-bearing: the curve reads the sums the bar then shows; a save
    # precedes the stop check, which saves first when it stops mid-epoch; an epoch's
    # record is written before its save, and the stop check comes after both.
    control = controller.Controller(
        trainer,
        config.epochs,
        [
            curve,
            reporting.ProgressBar(bar, curve, config.epochs, single=not run.multi_worker),
            reporting.EpochLog(
                trainer, history, run.outputs, run.logs, config.epochs, run.chief_print
            ),
            ending,  # as fit: the optimizer finalizes the weights before on_train_end
            *keras_callbacks,  # before the save, which holds their state
            saving,
            actions.StopOnSignal(run.stop, saving, run.strategy, config.epochs, agreed),
        ],
        agreed,
        alive,
    )
    return control, saving, ending


def _agreement(run: Run, saving: actions.Checkpointing) -> agreement.DecisionAgreement:
    """What every worker decides alike after each call: a stop, the next calls' steps, a
    timed save, and the call's first non-finite loss."""
    trainer = run.trainer
    return agreement.for_strategy(
        run.strategy,
        lambda: agreement.Decision(
            stop=run.stop.requested is not None,
            steps=trainer.pace.proposal(),
            eval_steps=trainer.eval_pace.proposal() if trainer.eval_pace else 0,
            save=saving.due_by_time(),
            call=trainer.last_call[1],
            bad=trainer.last_call[2],
        ),
        multi_worker=run.multi_worker,
        is_chief=run.node.is_chief,
    )
