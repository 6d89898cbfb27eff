"""The training state of any task: what training changes, built in the strategy's scope,
and each replica's own random streams.
"""

import contextlib
import dataclasses
import math
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.config import Config
from tf_mgpu.engine.input import data
from tf_mgpu.engine.input.checks import check_inputs
from tf_mgpu.engine.model import added_losses, layers, metrics, unseeded
from tf_mgpu.engine.model.compiled import (
    Compiled,
    build_compiled,
    check_compiled,
    check_sample_weights,
    has_call,
)
from tf_mgpu.engine.model.own_steps import evaluates_own_step, runs_own_step
from tf_mgpu.engine.state import lazy_state, optimizer_slots
from tf_mgpu.engine.task import Task
from tf_mgpu.errors import UserError


@dataclasses.dataclass(frozen=True)
class TrainState:
    """Everything training changes. `epoch` counts finished epochs and training
    continues from it; with the seed it fixes which examples come next (see
    `tf_mgpu.engine.input.data`). `optimizer.iterations` counts steps, except where a step
    may not apply the optimizer exactly once (a LossScaleOptimizer skips steps whose
    scaled gradient overflows; a model's own train_step does what it does): then
    `steps` counts them."""

    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    compiled: Compiled
    epoch: tf.Variable
    train_sums: metrics.ModelMetrics
    test_sums: metrics.ModelMetrics
    steps: tf.Variable | None = None
    # The optimizer's own gradient_accumulation_steps, which the engine runs instead.
    optimizer_accumulation: int | None = None
    # The model's variables its step updates on each replica, which every step then makes
    # the same everywhere (`tf_mgpu.engine.step.replica_state`); found by the Trainer.
    per_replica: list = dataclasses.field(default_factory=list)
    # keras.random's generator for draws without a seed, where the model draws from it.
    unseeded: keras.random.SeedGenerator | None = None

    @property
    def own_step(self) -> bool:
        """Whether the model trains with its own `train_step` (`own_steps.runs_own_step`)."""
        return runs_own_step(self.model)

    @property
    def own_eval(self) -> bool:
        """Whether the model is evaluated by its `test_step` (`own_steps.evaluates_own_step`)."""
        return evaluates_own_step(self.model)

    def metrics_for(self, name: str) -> metrics.ModelMetrics:
        """The loss and metrics of another split (`val`), in the strategy's scope."""
        found = metrics.ModelMetrics(self.model, name, own_loss=self.own_eval)
        found.logs = self.test_sums.logs  # the last evaluation step's, whichever split
        return found

    def random_states(self) -> list:
        """The model's random-number states, which are not weights: one per Keras
        SeedGenerator (a Dropout layer's, say). See `replica_random_streams`."""
        weights = {id(w) for w in self.model.weights}
        own = [v for v in self.model.variables if id(v) not in weights]
        return own if self.unseeded is None else [*own, self.unseeded.state]

    def variables(self) -> list:
        """Every variable that must agree across replicas."""
        counters = [self.epoch] if self.steps is None else [self.epoch, self.steps]
        return [*self.model.weights, *self.random_states(), *self.optimizer.variables, *counters]

    def checkpointed(self) -> dict:
        """What a checkpoint holds: everything training changes, and the epoch's metric sums.

        The optimizer's variables by name (`optimizer_slots`), without the learning rate:
        it comes from the flags, so a resumed run may change it. The random states are
        there when the model has any, so that a resumed run draws the dropout masks the
        uninterrupted one would have drawn.
        """
        held = {
            "weights": list(self.model.weights),
            "optimizer": optimizer_slots.named(self.optimizer, self.model.trainable_variables),
            "epoch": self.epoch,
            "train_sums": self.train_sums.variables(),
        }
        if self.random_states():
            held["random"] = self.random_states()
        if self.steps is not None:
            held["steps"] = self.steps
        return held

    def weight_bytes(self) -> int:
        return sum(math.prod(w.shape) * tf.as_dtype(w.dtype).size for w in self.model.weights)

    @staticmethod
    def may_lack(name: str) -> bool:
        """Whether a checkpoint written under another --dtype may lack `name` (a path in
        `checkpointed()`): a LossScaleOptimizer's own variables and the step counter
        exist only under mixed_float16 (see `settle`)."""
        return name == "steps" or name.startswith("optimizer/" + optimizer_slots.LOSS_SCALE)

    def settle(self, saved: Callable[[str], np.ndarray | None]) -> None:
        """Makes the step count whole after a restore from a checkpoint written under
        another --dtype; `saved(name)` is the checkpoint's value of `name`, or None.

        Under mixed_float16 the steps are counted apart from the optimizer's updates
        (a LossScaleOptimizer skips a step whose gradient overflowed); elsewhere the
        optimizer's iterations count them. A checkpoint without the counter applied
        every step, so its iterations are its steps. One with the counter resumes
        where steps are counted by iterations only if none was skipped: else it would
        resume at another example than the one that comes next.
        """
        steps = saved("steps")
        applied = int(self.optimizer.iterations.numpy())
        if self.steps is not None and steps is None:
            self.steps.assign(applied)
        elif self.steps is None and steps is not None and int(steps) != applied:
            raise UserError(
                f"the checkpoint took {int(steps)} steps and applied {applied} updates (its "
                f"loss scaling skipped {int(steps) - applied} steps that overflowed); a run "
                f"without loss scaling counts its steps by the updates, so it would resume "
                f"at another example: resume with the --dtype the checkpoint was written "
                f"with (see flags.txt), or pass --clean to start over"
            )


def create_state(
    strategy: tf.distribute.Strategy,
    config: Config,
    task: Task,
    sample: data.Split,
    evaluated: data.Split | None = None,
) -> TrainState:
    """Builds the task's compiled model, its optimizer and the counters in `strategy.scope()`,
    so they are mirrored. `sample` (a few training examples) checks the model's inputs;
    `evaluated` (a few test examples, of another form where a train_step takes other data)
    finds what the model's own test_step returns."""
    keras.utils.set_random_seed(config.seed)
    policy = keras.config.dtype_policy()  # the run's policy is its model's, not the process's
    keras.config.set_dtype_policy(config.dtype or "float32")
    if config.dtype == "float64":
        # Keras's losses and metrics, made now or in a step (an own compute_loss), are
        # float64 too; `training.run` puts the process's floatx back at its end.
        keras.config.set_floatx("float64")
    try:
        return _create_state(strategy, task, sample, evaluated or sample)
    finally:
        keras.config.set_dtype_policy(policy)


def _create_state(
    strategy: tf.distribute.Strategy, task: Task, sample: data.Split, evaluated: data.Split
) -> TrainState:
    with strategy.scope():
        net = task.build_model()
        unseeded.begin()  # made by the first forward pass in this scope, if it draws
        if not isinstance(net, keras.Model):
            raise UserError(
                f"{task.where}: build_model() returned {type(net).__name__}, not a Keras model"
            )
        check_inputs(net, sample.x, task.where)
        layers.refuse_stateful_rnns(net, task.where)
        # Also builds a subclassed model's variables, which exist after a first call. A
        # model with no call() of its own (a GAN whose train_step calls its parts) has no
        # forward pass: Keras's fit never calls it either.
        y_pred = None
        if has_call(net):
            inputs = task.preprocess(sample.x)
            y_pred = net(inputs, training=False)
            added_losses.find(net, inputs)
        found = check_compiled(net, sample.y, y_pred, task.where)
        check_sample_weights(net, sample.y, y_pred, sample.w, task.where)
        # Labels of zeros, valid for any loss: what the labels hold is checked later, over
        # every split (`checks.check_labels`), and these calls only build and check shapes.
        y = tf.nest.map_structure(lambda a: tf.zeros_like(tf.constant(a)), sample.y)
        accumulation = _take_accumulation(net, task.where)
        net.optimizer.build(net.trainable_variables)
        own, own_eval = runs_own_step(net), evaluates_own_step(net)
        # The compiled loss and metrics made before the first step, as fit makes them.
        try:
            build_compiled(net, sample.x, y, y_pred)
        except (KeyError, ValueError):
            if not own:
                raise
            # Its train_step hands them other outputs than call()'s (keras.io's patch_convnet
            # returns attention maps too): made from what its first step hands them.
            lazy_state.build_compiled_later(net)
        batch = (task.preprocess(sample.x), sample.y, sample.w)
        if own:  # what its train_step builds on a first call: before the metrics are read
            lazy_state.build(strategy, net, *batch)
        train_sums = metrics.ModelMetrics(net, "train", keeps=True, own_loss=own)
        test_sums = metrics.ModelMetrics(net, "test", own_loss=own_eval)
        # What the model's own steps return, kept as fit and evaluate show it.
        if own:
            train_sums.logs = lazy_state.own_logs(strategy, net.train_step, *batch)
        if own_eval:
            test = (task.preprocess(evaluated.x), evaluated.y, evaluated.w)
            test_sums.logs = lazy_state.own_logs(strategy, net.test_step, *test)
        # Steps are counted apart from the optimizer's iterations where a step may not
        # apply the optimizer once: a loss-scale skip, or a train_step of the user's.
        counts = own or isinstance(net.optimizer, keras.optimizers.LossScaleOptimizer)
        return TrainState(
            model=net,
            optimizer=net.optimizer,
            compiled=found,
            epoch=tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch"),
            train_sums=train_sums,
            test_sums=test_sums,
            steps=_step_counter() if counts else None,
            optimizer_accumulation=accumulation,
            unseeded=unseeded.made(),
        )


def _take_accumulation(net: keras.Model, where: str) -> int | None:
    """The optimizer's `gradient_accumulation_steps` K, taken from it (set to None there).

    Keras accumulates inside the optimizer with a `merge_call` in a `cond`, which
    fails under a strategy (under `fit` too). The engine runs the same maths
    instead: K micro-batches per step, their gradients summed, one update of the
    mean over the K x batch examples (`--accumulation_steps`), exact on any
    number of replicas. The export keeps the optimizer as trained, without it.
    """
    optimizer = net.optimizer
    holders = [optimizer, getattr(optimizer, "inner_optimizer", None)]
    found = [h for h in holders if h is not None and (h.gradient_accumulation_steps or 1) > 1]
    if not found:
        return None
    steps = found[0].gradient_accumulation_steps
    if runs_own_step(net):
        raise UserError(
            f"{where}: the optimizer's gradient_accumulation_steps={steps} cannot run under a "
            f"distribution strategy (Keras's accumulation fails there, under fit too), and "
            f"tf_mgpu cannot split {type(net).__name__}'s own train_step into micro-batches; "
            f"drop gradient_accumulation_steps and raise the batch size instead"
        )
    for holder in found:
        holder.gradient_accumulation_steps = None
    return steps


def _step_counter() -> tf.Variable:
    """Steps taken, counted by the replica steps (replica 0's count stands for all)."""
    return tf.Variable(
        0,
        dtype=tf.int64,
        trainable=False,
        name="steps",
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )


# Apart from the seeds Keras draws (1 to 1e9), so no replica's stream is another layer's.
_STREAM_STRIDE = 2_654_435_761


@contextlib.contextmanager
def replica_random_streams(state: TrainState):
    """Each replica draws its own random numbers (dropout masks) inside the block.

    A Keras SeedGenerator's state [seed, counter] is a variable that every
    replica updates alone (aggregation "none"), so N replicas would draw N
    copies of one mask. Inside the block replica r draws from seed + r x
    stride instead; after it the state is what one device's would be, the
    same on every replica, so it stays reproducible from --seed and fits a
    checkpoint.
    """
    context = tf.distribute.get_replica_context()
    states = state.random_states()
    if not states or context is None or context.num_replicas_in_sync == 1:
        yield
        return
    replica = tf.cast(context.replica_id_in_sync_group, tf.int64)
    shift = tf.stack([replica * _STREAM_STRIDE, tf.constant(0, tf.int64)])
    for variable in states:
        variable.assign_add(tf.cast(shift, variable.dtype))
    yield
    for variable in states:
        variable.assign_sub(tf.cast(shift, variable.dtype))
