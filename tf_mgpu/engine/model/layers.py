"""What a model's layers hold that data-parallel training cannot keep as Keras's `fit` on one
device keeps it, said in one line before training."""

import keras

from tf_mgpu import internals
from tf_mgpu.errors import UserError


def every_layer(model: keras.Layer) -> list[keras.Layer]:
    """Every layer in `model` at any depth: nested models' layers, and those of the user's
    own layers (a block's BatchNormalization), but its inputs."""
    return [
        layer
        for layer in internals.sublayers(model)
        if not isinstance(layer, keras.layers.InputLayer)
    ]


def refuse_stateful_rnns(model: keras.Model, where: str) -> None:
    """A recurrent layer built with `stateful=True` carries its state from one batch to the
    next, so it needs batches of one fixed size, in order, each on the device that holds its
    state: tf_mgpu shuffles each epoch and splits every batch over replicas and workers
    (Keras's fit under a distribution strategy cannot run one either)."""
    for layer in every_layer(model):
        if getattr(layer, "stateful", False) and isinstance(layer, keras.layers.RNN):
            raise UserError(
                f"{where}: layer {layer.name!r} ({type(layer).__name__}) is stateful=True, "
                f"carrying its state from one batch to the next, which data-parallel training "
                f"cannot keep (every batch is shuffled and split over replicas); build it "
                f"with stateful=False"
            )
