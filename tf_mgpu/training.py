"""The assembly: flags' Config and a task in, a trained, checkpointed, exported model out.

A custom loop, not `model.fit`: Keras 3's `fit` fails under
MultiWorkerMirroredStrategy (keras-team/keras#20585), while `strategy.run`
inside `tf.function` works the same on one device, N GPUs and N machines.
The engine (`tf_mgpu.engine`) owns the step maths and every collective;
the task (`tf_mgpu.tasks`) supplies the compiled model and the data.
"""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf

from tf_mgpu import failures, timing
from tf_mgpu.cluster import elastic, startup_checks, supervisor, tf_config
from tf_mgpu.config import DTYPES, KERAS_FLOATS, Config
from tf_mgpu.engine.control import actions, callbacks, controller, finalize
from tf_mgpu.engine.distribute import agreement, collectives, devices, strategies
from tf_mgpu.engine.faults import liveness, stopping
from tf_mgpu.engine.input import stream
from tf_mgpu.engine.input.data import Data
from tf_mgpu.engine.model import unseeded
from tf_mgpu.engine.model.own_steps import overridden
from tf_mgpu.engine.state import checkpoint
from tf_mgpu.engine.state.training_state import TrainState
from tf_mgpu.engine.step import replica_state, replicas
from tf_mgpu.engine.step.trainer import Trainer
from tf_mgpu.errors import UserError
from tf_mgpu.outputs import export, progress, report, reporting, summary, tensorboard
from tf_mgpu.tasks import adapter


@dataclasses.dataclass(frozen=True)
class Result:
    """What `run` returns: the summary the chief writes, and the trained state."""

    summary: dict
    state: TrainState


@dataclasses.dataclass(frozen=True)
class _Run:
    """What the steps of one run share, built once in `run`."""

    strategy: tf.distribute.Strategy
    node: tf_config.Node  # this process's place in the cluster
    config: Config
    trainer: Trainer
    checkpoints: checkpoint.Checkpoints
    outputs: report.Outputs
    logs: tensorboard.Summaries
    stop: stopping.Stop
    flagfile: str | None
    clock: timing.Phases
    callbacks: callbacks.Callbacks | None  # the task's Keras callbacks, if it has any

    @property
    def multi_worker(self) -> bool:
        return self.node.num_workers > 1

    def chief_print(self, *args, **kwargs) -> None:
        if self.node.is_chief:
            print(*args, **kwargs)


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
    node = tf_config.node_from_env()
    chief_print = print if node.is_chief else (lambda *args, **kwargs: None)
    outputs = report.Outputs(config.model_dir if node.is_chief else None)
    # Inputs are checked before joining the cluster: a task that failed later
    # would leave its peers waiting for it.
    outputs.check()
    startup_checks.strategy(config.strategy, node, config.num_cpu_devices)
    stated_batch = config.batch_size
    config = _batch_for(config, node)
    with clock.phase("build"):
        if strategy is None:  # before the task file runs: it may create TensorFlow objects
            devices.grow_gpu_memory(config.memory_growth)
            devices.split_cpu(config.num_cpu_devices)
        work = adapter.load(config.task if task is None else task)
        if splits_given:
            adapter.refuse_unread_splits(work, config)
        # --dtype, else the policy the task file set (float32 if none).
        if config.dtype is None and work.dtype not in (*DTYPES, *KERAS_FLOATS):
            raise UserError(
                f"{work.where} sets the dtype policy {work.dtype!r}; tf_mgpu trains under "
                f"{', '.join((*DTYPES, *KERAS_FLOATS))}: set one of them there, or pass --dtype"
            )
        config = dataclasses.replace(config, dtype=config.dtype or work.dtype)
        if config.batch_workers is not None:  # --scale_lr's rate is for the stated batch
            work = dataclasses.replace(work, reference_batch=work.reference_batch or stated_batch)
        if strategy is None:
            supervisor.notify("joining")
            strategy = strategies.create(config.strategy, node)
            supervisor.notify("joined")
        stop.start_training()
    if datasets is None:
        with clock.phase("data"):
            # Seeded from --seed first: a tf.data shuffle given no seed, or NumPy's global
            # random, then draws the same in every worker's load_data (each worker reads
            # its share of one order) and in every run of the command.
            keras.utils.set_random_seed(config.seed)
            datasets = work.load_data(config)
    if config.stream_shard == "file" and not isinstance(datasets.train, stream.Stream):
        raise UserError(
            f"--stream_shard=file gives each worker its own files of a tf.data training "
            f"dataset; {work.where} returns another kind of training split: drop the flag"
        )
    if stream.streams(datasets):  # a task's tf.data input streams, whatever --input says
        config = dataclasses.replace(config, input="stream")
    with clock.phase("build"):
        trainer = Trainer(strategy, config, work, datasets)
        # --input=auto resolved; the optimizer's gradient_accumulation_steps taken as ours.
        config = dataclasses.replace(
            config, input=trainer.input_mode, accumulation_steps=trainer.accumulation_steps
        )
        keras_callbacks = callbacks.from_task(
            work,
            trainer,
            strategy,
            epochs=config.epochs,
            flag_rate=config.learning_rate,
            validation=datasets.validation is not None,
        )
    if config.clean:  # once the task checked out: a broken one loses nothing
        with stop.deferred():
            outputs.clean()
    collectives.barrier(strategy)  # no peer reads checkpoints the chief is deleting
    checkpoints = checkpoint.Checkpoints(
        trainer.state.checkpointed(),
        config.model_dir,
        is_chief=node.is_chief,
        warn=chief_print,
        extra=keras_callbacks,
        inputs=trainer.stream_loop,
        may_lack=trainer.state.may_lack,
        settle=trainer.state.settle,
    )
    logs = tensorboard.Summaries(config.model_dir if node.is_chief else None)
    try:
        return _train(
            _Run(
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


def _batch_for(config: Config, node: tf_config.Node) -> Config:
    """`config` with --batch_size for this cluster: with --batch_workers, each replica's
    share of the same global batch on `node.num_workers` workers (the chief says so)."""
    batch = elastic.per_replica_batch(config.batch_size, config.batch_workers, node.num_workers)
    if batch != config.batch_size and node.is_chief:
        print(
            f"tf_mgpu batch: --batch_size={config.batch_size} is per replica on "
            f"--batch_workers={config.batch_workers} workers; on {node.num_workers} each "
            f"replica takes {batch}, for the same global batch",
            flush=True,
        )
    return dataclasses.replace(config, batch_size=batch)


def _train(run: _Run) -> Result | None:
    """`run` once the cluster, the data and the state exist: resume, train, save, export."""
    trainer, config, clock = run.trainer, run.config, run.clock
    with clock.phase("build"), run.stop.deferred():
        history = _resume(run)
    epoch, _ = trainer.position()
    stopped_by = run.callbacks.stopped_before() if run.callbacks else None
    if epoch >= config.epochs or stopped_by:
        if run.outputs.export_unfinished():  # the chief, after an export that failed
            with clock.phase("export"):
                paths = _export(trainer, run.outputs.model_dir)
            run.outputs.exported(paths)
            run.chief_print(
                f"tf_mgpu export: the last run's export had not finished; wrote {', '.join(paths)}",
                flush=True,
            )
        why = (
            f"training was stopped by {stopped_by} (model.stop_training)"
            if stopped_by
            else f"raise --epochs to train on (--epochs={config.epochs})"
        )
        run.chief_print(
            f"tf_mgpu done: --model_dir={config.model_dir} already holds {epoch} epochs; "
            f"nothing to train: {why}. Pass --clean to start over",
            flush=True,
        )
        return None
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
    alive = liveness.Liveness()
    with failures.as_one_line(run.config, run.trainer, run.checkpoints, run.node):
        # Compiling changes nothing: no deadline holds, and a signal ends the run at once.
        alive.compiling()
        run.stop.compiling()
        compile_seconds = trainer.compile()
        clock.add("compile", compile_seconds)
        alive.compiled()
        run.stop.training()
        saving = actions.Checkpointing(
            trainer,
            run.checkpoints,
            config.checkpoint_steps,
            config.checkpoint_secs,
            liveness=alive,
            strategy=run.strategy,
        )
        agreed = agreement.for_strategy(
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
        control.run()
        # The end of the run holds collectives too: each under its own word (`liveness`),
        # an evaluation in agreed calls that a signal stops as any other, one line per fault.
        final = _after_callbacks(run, history, ending, control.evaluate)
        if final:  # the weights changed after the last save: a rerun and evaluate see them
            saving.save(again=True)  # counted in saving.seconds, added below
        clock.add("train", trainer.call_seconds)
        clock.add("evaluate", trainer.eval_seconds)
        clock.add("checkpoint", saving.seconds)
        return _finish(run, history, saving, final, alive)


def _after_callbacks(
    run: _Run, history: list[dict], ending: finalize.Finalize, evaluate: Callable[[], dict]
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


def _finish(
    run: _Run,
    history: list[dict],
    saving: actions.Checkpointing,
    final: dict,
    alive: liveness.Liveness,
) -> Result:
    """After the last epoch: the summary, the workers' agreement, the outputs and exports.

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
    return Result(summary=facts, state=trainer.state)


def _export(trainer: Trainer, model_dir: str) -> list[str]:
    """The task's exports of the trained model (its layers as the task built them, not as
    --sync_batch_norm trained them); returns the paths written."""
    replicas.unsynchronize(trainer.synchronized)
    return (trainer.task.export or export.save)(trainer.state.model, model_dir)


# What a refused global batch adds: a run resumed on another worker count keeps it so.
_ELSEWHERE = " (on another worker count, with --batch_workers=<its worker count>)"


def _resume(run: _Run) -> list[dict]:
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
