"""A task's Keras callbacks, run between the compiled calls as Keras's `fit` runs them.

`fit` calls `on_train_begin`, then per epoch `on_epoch_begin`, batch hooks,
`on_epoch_end(logs)` after validating, and stops when a callback sets
`model.stop_training`; `on_train_end` last. The same here, with two differences
a user can see, both documented: batch hooks run once per compiled call (every
`--steps_per_loop` steps, as `fit` runs them every `steps_per_execution` steps), and
a callback's state is in every checkpoint, so a killed run resumes with the
callbacks where they were (a Keras `fit` resumed by BackupAndRestore starts them
afresh).

Every worker runs the callbacks on the same logs (sums all-reduced over the
cluster), so they decide alike; after each hook that may change anything, the
workers check that they hold the same learning rate and stop
flag (one all-reduce), and fail in one line if the rate or the stop differ.
"""

import keras

from tf_mgpu import strict_json
from tf_mgpu.engine.control.controller import Action, Moment
from tf_mgpu.engine.distribute import collectives
from tf_mgpu.engine.model.schedules import inner
from tf_mgpu.engine.state import callback_state
from tf_mgpu.errors import Failure, UserError

# Keras callbacks that do what tf_mgpu already does: refused, naming the built-in.
BUILT_IN = {
    keras.callbacks.ModelCheckpoint: "tf_mgpu checkpoints into --model_dir/checkpoints "
    "itself (after every epoch, and every --checkpoint_steps steps)",
    keras.callbacks.BackupAndRestore: "tf_mgpu resumes from --model_dir itself: rerun the "
    "same command",
    keras.callbacks.TensorBoard: "tf_mgpu writes TensorBoard logs into --model_dir/tensorboard "
    "itself",
    keras.callbacks.ProgbarLogger: "tf_mgpu prints its own progress",
}


def checked(
    returned, where: str, metric_names: list[str] | None, validation: bool, rate_settable: bool
) -> list:
    """The task's `callbacks()` result as a list of Keras callbacks; UserError otherwise.

    `metric_names` (the compiled loss and metrics, None if unknown) and `validation`
    (whether there is a validation split) check what a callback monitors: `fit` would
    warn once and then do nothing for an epoch-long run. `rate_settable`: whether the
    optimizer's rate is a number a callback may set (not a schedule).
    """
    if isinstance(returned, keras.callbacks.Callback):
        returned = [returned]
    if not isinstance(returned, (list, tuple)) or not all(
        isinstance(c, keras.callbacks.Callback) for c in returned
    ):
        raise UserError(
            f"{where}: callbacks() returned {type(returned).__name__}; return a list of "
            f"keras.callbacks.Callback instances"
        )
    for callback in returned:
        for kind, why in BUILT_IN.items():
            if isinstance(callback, kind):
                raise UserError(
                    f"{where}: callbacks() returns {kind.__name__}, which tf_mgpu does not "
                    f"run: {why}; remove it"
                )
        name = type(callback).__name__
        if _overrides(callback, UNRUN_HOOKS):
            raise UserError(
                f"{where}: callbacks() returns {name}, which relies on on_test_* or "
                f"on_predict_* hooks; tf_mgpu evaluates with its own pass and never calls "
                f"them, so it would act otherwise than under fit; remove it"
            )
        if not rate_settable and isinstance(callback, RATE_SETTERS):
            raise UserError(
                f"{where}: {name} sets the learning rate, but the optimizer follows a "
                f"schedule (compiled, or --scale_lr's warmup) that cannot be set; compile "
                f"with a constant rate, or drop {name}"
            )
        monitor = getattr(callback, "monitor", None)
        if isinstance(monitor, str):
            _check_monitor(name, monitor, where, metric_names, validation)
    return list(returned)


RATE_SETTERS = (keras.callbacks.LearningRateScheduler, keras.callbacks.ReduceLROnPlateau)


def _check_monitor(name, monitor, where, metric_names, validation) -> None:
    if monitor.startswith("val_") and not validation:
        raise UserError(
            f"{where}: {name} monitors {monitor!r}, but the task has no validation split; "
            f"return (train, validation, test) from load_data(), pass --validation_split=0.2, "
            f"or monitor {monitor.removeprefix('val_')!r}"
        )
    if metric_names is None:
        return
    known = [*metric_names, *(f"val_{m}" for m in metric_names if validation)]
    if monitor not in known:
        raise UserError(
            f"{where}: {name} monitors {monitor!r}, which the logs do not hold (they hold "
            f"{', '.join(known)}); monitor one of those"
        )


def keras_logs(record: dict) -> dict:
    """An epoch's record as `fit` names its logs: `loss`, `<metric>`, `val_loss`, ...
    (the test split's figures are not there: `fit` never sees a test split)."""
    logs = {
        key.removeprefix("train_"): value
        for key, value in record.items()
        if key.startswith("train_") and key != "train_examples"
    }
    logs.update({k: v for k, v in record.items() if k.startswith("val_") and k != "val_examples"})
    return logs


class Callbacks(Action):
    """Runs `callbacks` on `trainer`'s model as `fit` does; see the module's docstring.

    Their state goes into each checkpoint beside it (`state` and `restore`, called by
    `checkpoint.Checkpoints`). Place this action before the checkpointing one.
    """

    def __init__(self, callbacks: list, trainer, strategy, *, epochs: int, flag_rate):
        self._callbacks, self._trainer, self._strategy = callbacks, trainer, strategy
        self._model = trainer.state.model
        self._flag_rate = flag_rate  # --learning_rate of this run (None: not given)
        self._batch_hooks = any(_overrides(c, BATCH_HOOKS) for c in callbacks)
        self._end_hooks = any(_overrides(c, ("on_train_end",)) for c in callbacks)
        self._agreed = collectives.SameTextCheck(strategy)
        self._saved: dict | None = None  # what a checkpoint restored, applied at the start
        self.stopped_by: str | None = None  # the callback that set model.stop_training
        self.final: dict = {}  # val_* and test_* again, if on_train_end set the weights
        self._logs: dict = {}
        params = {"epochs": epochs, "steps": trainer.train_steps, "verbose": 0}
        for callback in callbacks:
            callback.set_model(self._model)
            callback.set_params(params)

    # -- the checkpoint's part -------------------------------------------------------

    def state(self) -> dict:
        """What a checkpoint holds of the callbacks: each one's state, the rate they set,
        and which one stopped training (if one did)."""
        rate = inner(self._trainer.state.optimizer)._learning_rate  # or a schedule
        return {
            "callbacks": [
                {"class": type(c).__name__, "state": callback_state.state_of(c)}
                for c in self._callbacks
            ],
            "learning_rate": None if callable(rate) else float(rate.numpy()),
            "flag_rate": self._flag_rate,
            "stopped_by": self.stopped_by if self._model.stop_training else None,
        }

    def restore(self, saved: dict | None) -> None:
        """Keeps what a checkpoint held (None: it held nothing of callbacks), to apply
        once `on_train_begin` has run."""
        self._saved = saved

    def stopped_before(self) -> str | None:
        """The callback that stopped the run this checkpoint comes from, if one did."""
        return self._saved.get("stopped_by") if self._saved else None

    # -- the hooks -------------------------------------------------------------------

    def start_training(self) -> None:
        self._model.stop_training = False
        for callback in self._callbacks:
            callback.on_train_begin()
        if self._saved is not None:  # a resumed run: the callbacks as they were at the save
            self._apply(self._saved)
        self._agree()

    def start_epoch(self, trainer, epoch: int) -> None:
        step = trainer.position()[1]
        if step == 0:  # a resumed epoch began before its save
            for callback in self._callbacks:
                callback.on_epoch_begin(epoch - 1)
        if self._batch_hooks:
            self._batch("begin", step)
        self._agree()

    def after_call(self, moment: Moment) -> None:
        if not self._batch_hooks:
            return
        step = moment.step - (moment.epoch - 1) * self._trainer.train_steps
        self._batch("end", step - 1, logs=keras_logs(_train_means(self._trainer)))
        if not moment.last:
            self._batch("begin", step)
        self._agree()

    def after_epoch(self, record: dict) -> None:
        self._logs = keras_logs(record)
        for callback in self._callbacks:
            callback.on_epoch_end(record["epoch"] - 1, self._logs)
            self._note_stop(callback)
        self._agree()

    def stop_requested(self) -> bool:
        return bool(self._model.stop_training)

    def finish_training(self) -> None:
        """`on_train_end`; if it set the weights (EarlyStopping's `restore_best_weights`),
        the last evaluation no longer holds: `final` holds theirs."""
        before = collectives.weights_digest(self._model) if self._end_hooks else ""
        for callback in self._callbacks:
            callback.on_train_end(self._logs)
        changed = self._end_hooks and collectives.weights_digest(self._model) != before
        self._agree(changed)
        if changed:  # every worker, as agreed: evaluating is collective
            self.final = self._trainer.evaluate()

    # -- internals --------------------------------------------------------------------

    def _apply(self, saved: dict) -> None:
        names = [type(c).__name__ for c in self._callbacks]
        held = [entry["class"] for entry in saved["callbacks"]]
        if held != names:
            raise UserError(
                f"the checkpoint holds the state of the callbacks {held}, but callbacks() "
                f"returns {names}; return the same callbacks to resume, or pass --clean"
            )
        for callback, entry in zip(self._callbacks, saved["callbacks"], strict=True):
            callback_state.restore(callback, entry["state"])
        if saved["learning_rate"] is not None and saved["flag_rate"] == self._flag_rate:
            inner(self._trainer.state.optimizer).learning_rate = saved["learning_rate"]

    def _batch(self, when: str, step: int, logs=None) -> None:
        for callback in self._callbacks:
            getattr(callback, f"on_train_batch_{when}")(step, logs)
            self._note_stop(callback)

    def _note_stop(self, callback) -> None:
        if self._model.stop_training and self.stopped_by is None:
            self.stopped_by = type(callback).__name__

    def _agree(self, *more) -> None:
        """Under MultiWorkerMirroredStrategy, fails unless every worker's callbacks set the
        same rate and the same stop (one all-reduce); elsewhere nothing."""
        rate = inner(self._trainer.state.optimizer)._learning_rate
        decided = [None if callable(rate) else float(rate.numpy()), self.stop_requested(), *more]
        if not self._agreed(strict_json.dumps(decided)):
            raise Failure(
                "the workers' Keras callbacks disagree (the learning rate, "
                "model.stop_training or the weights set at the end differ); a callback must "
                "decide from its logs alone, not from this worker's clock, randomness or files"
            )


def _overrides(callback, hooks) -> bool:
    """Whether `callback` has its own code for any of `hooks`: a method of its class, or a
    function set on the object (LambdaCallback sets the hooks it is given that way)."""
    base = keras.callbacks.Callback
    return any(
        getattr(getattr(callback, h), "__func__", None) is not getattr(base, h) for h in hooks
    )


BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")
# Hooks tf_mgpu never calls: its evaluation is its own pass, not Keras's evaluate.
UNRUN_HOOKS = (
    "on_test_begin",
    "on_test_end",
    "on_test_batch_begin",
    "on_test_batch_end",
    "on_predict_begin",
    "on_predict_end",
    "on_predict_batch_begin",
    "on_predict_batch_end",
)


def _train_means(trainer) -> dict:
    """The epoch's training figures so far, named as an epoch's record names them."""
    return {f"train_{k}": v for k, v in trainer.state.train_sums.result().items()}


def from_task(task, trainer, strategy, *, epochs: int, flag_rate, validation: bool):
    """The task's callbacks, checked, as the action that runs them; None if it has none."""
    if task.callbacks is None:
        return None
    names = trainer.state.train_sums.names()
    settable = not callable(inner(trainer.state.optimizer)._learning_rate)
    returned = checked(task.callbacks(), task.where, names, validation, settable)
    return Callbacks(returned, trainer, strategy, epochs=epochs, flag_rate=flag_rate)
