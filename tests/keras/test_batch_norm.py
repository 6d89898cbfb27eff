"""A model with many BatchNormalization layers (keras's default, not synchronized), as a
user trains it: one short warning line, however many layers."""

import dataclasses

from tests.keras.helpers import FLOAT64, load
from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.engine.step import replicas


def test_a_run_prints_one_warning_naming_three_layers_and_counting_the_rest(capsys):
    task = load("many_batch_norms", BLOCKS=3)  # 6 layers; the file's 52 take a minute to train
    config = dataclasses.replace(FLOAT64, epochs=1)
    result = training.run(config, task, strategy=cpu_strategy(2))
    warnings = [s for s in capsys.readouterr().out.splitlines() if "warning" in s]
    names = replicas.unsynchronized_batch_norm(result.state.model)
    assert len(names) == 6
    assert warnings == [
        f"tf_mgpu warning: BatchNormalization layers {names[0]}, {names[1]}, {names[2]} and 3 "
        f"more normalise each replica's 16 examples with their own statistics, not the global "
        f"batch's 32, so 2 replicas do not train like one device; build them with "
        f"keras.layers.BatchNormalization(synchronized=True), or pass --sync_batch_norm"
    ]
