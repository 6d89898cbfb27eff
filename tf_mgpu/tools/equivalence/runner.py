"""`check`'s run: the user's task on one device and on N replicas, compared and explained."""

import dataclasses

import numpy as np

from tf_mgpu.config import Config
from tf_mgpu.engine.input import stream
from tf_mgpu.engine.input.data import Data
from tf_mgpu.engine.model.own_steps import overridden
from tf_mgpu.engine.step import jit, replica_state
from tf_mgpu.engine.step import replicas as replicas_lib
from tf_mgpu.errors import UserError
from tf_mgpu.tasks import adapter
from tf_mgpu.tools.equivalence import report, sides

# Relative to each layer's scale: rounding alone stays far below, a real difference
# (batch statistics per replica, a loss scaled by the replica count) far above.
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "mixed_bfloat16": 1e-2}
TEST_EXAMPLES = 1024


@dataclasses.dataclass(frozen=True)
class Outcome:
    text: str
    equivalent: bool


def check(config: Config, replicas: int, steps: int) -> Outcome:
    """Trains `steps` steps of `config.task` at the global batch `config.batch_size` x
    `replicas`, on one device and on `replicas` replicas, and reports whether they agree."""
    task, turned_off = sides.without_randomness(adapter.load(config.task))
    loaded = stream.materialized(task.load_data(config))  # a tf.data split, read whole
    global_batch = config.batch_size * replicas
    needed = steps * global_batch
    if len(loaded.train) < needed:
        raise UserError(
            f"{task.where}: check needs {needed:,} training examples ({steps} steps of "
            f"{global_batch}) and load_data() gave {len(loaded.train):,}; lower --steps "
            f"or --batch_size"
        )
    datasets = Data(
        loaded.train.take(slice(0, needed)),
        loaded.test.take(slice(0, min(len(loaded.test), TEST_EXAMPLES))),
    )
    one_strategy, many_strategy = sides.strategies_for(replicas)
    # Like with like: N CPU replicas cannot use XLA, and XLA rounds otherwise.
    base = dataclasses.replace(config, jit_compile=False, epochs=2, steps_per_loop=steps)
    one = sides.run_side(
        one_strategy, dataclasses.replace(base, batch_size=global_batch), task, datasets, steps
    )
    many = sides.run_side(many_strategy, base, task, datasets, steps)
    tolerance = TOLERANCE[config.dtype]
    rows, first, equivalent = sides.compare(one, many, tolerance)
    model = one.trainer.state.model
    facts = report.Facts(
        task=task.where.removeprefix("--task="),
        model=model.name,
        parameters=model.count_params(),
        steps=steps,
        dtype=config.dtype,
        tolerance=tolerance,
        one=one,
        many=many,
        rows=rows,
        first_forward=first,
        equivalent=equivalent,
        randomness_off=turned_off,
        unsynchronized=replicas_lib.unsynchronized_batch_norm(model),
        retrace_differs=sides.retrace_differs(one, datasets.train),
        xla_one=jit.choose(config.jit_compile, one_strategy, model, one.trainer.input_mode),
        xla_many=jit.choose(config.jit_compile, many_strategy, model, many.trainer.input_mode),
        memory=memory_per_replica(many, one.outputs),
        own_step=", ".join(m for m in overridden(model) if not m.endswith(".test_step")) or None,
        per_replica_state=tuple(
            replica_state.named(many.trainer.state.model, many.trainer.state.per_replica)
        ),
    )
    return Outcome(text=report.table(facts), equivalent=equivalent)


def memory_per_replica(many: sides.Side, outputs) -> tuple[int, int | None]:
    """(bytes of weights and optimizer state, bytes of one replica's layer outputs or None):
    an estimate from shapes; the backward pass keeps about as much again."""
    state = many.trainer.state
    held = sum(
        int(np.prod(v.shape)) * np.dtype(getattr(v.dtype, "as_numpy_dtype", v.dtype)).itemsize
        for v in [*state.model.weights, *state.optimizer.variables]
    )
    if outputs is None:
        return held, None
    share = sum(o.nbytes for o in outputs) // many.replicas
    return held, share
