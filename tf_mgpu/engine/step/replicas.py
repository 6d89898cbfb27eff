"""What in a model makes N replicas train differently from one device, found before training.

The engine makes the gradient the same (see `tf_mgpu.engine.step.trainer`), but a
layer that computes over the batch it is handed sees one replica's share:
`BatchNormalization` normalises with statistics of `per_replica` examples,
not of the global batch, unless built with `synchronized=True`, which
all-reduces them (keras.io: "synchronized... across all devices at each
training step in a distributed training strategy").
"""

import keras

from tf_mgpu.engine.model.layers import every_layer


def unsynchronized_batch_norm(model: keras.Model) -> list[str]:
    """The names of the model's BatchNormalization layers that keep per-replica statistics."""
    return [
        layer.name
        for layer in every_layer(model)
        if isinstance(layer, keras.layers.BatchNormalization)
        and not getattr(layer, "synchronized", False)
    ]


def synchronize(model: keras.Model) -> list[keras.layers.BatchNormalization]:
    """--sync_batch_norm: the model's BatchNormalization layers built unsynchronized made to
    normalise over the global batch (Keras reads `synchronized` in each call); returns them,
    so the export can hand them back as the task built them (`unsynchronize`)."""
    found = [
        layer
        for layer in every_layer(model)
        if isinstance(layer, keras.layers.BatchNormalization)
        and not getattr(layer, "synchronized", False)
    ]
    for layer in found:
        layer.synchronized = True
    return found


def unsynchronize(layers: list) -> None:
    for layer in layers:
        layer.synchronized = False


def synchronized_line(layers: list, replicas: int) -> str | None:
    """The start line of --sync_batch_norm, or None when it changed nothing."""
    if not layers:
        return None
    names = [layer.name for layer in layers]
    several = len(names) > 1
    return (
        f"tf_mgpu batch norm: --sync_batch_norm: {batch_norms(names)} "
        f"{'normalise' if several else 'normalises'} over the global batch of all {replicas} "
        f"replicas (one all-reduce of the statistics per layer and step), as one device does"
    )


def warning(model: keras.Model, replicas: int, per_replica: int) -> str | None:
    """One line saying what differs from one device and how to fix it, or None."""
    names = unsynchronized_batch_norm(model)
    if replicas == 1 or not names:
        return None
    several = len(names) > 1
    return (
        f"tf_mgpu warning: {batch_norms(names)} "
        f"{'normalise' if several else 'normalises'} each replica's "
        f"{per_replica} examples with their own statistics, not the global batch's "
        f"{per_replica * replicas}, so {replicas} replicas do not train like one device; "
        f"build {'them' if several else 'it'} with "
        f"keras.layers.BatchNormalization(synchronized=True), or pass --sync_batch_norm"
    )


def batch_norms(names: list[str], shown: int = 3) -> str:
    """'BatchNormalization bn', or for several 'BatchNormalization layers bn1, bn2 and bn3',
    naming the first `shown` of more ('..., bn3 and 49 more'): a big model has dozens."""
    if len(names) == 1:
        return f"BatchNormalization {names[0]}"
    if len(names) <= shown:
        return f"BatchNormalization layers {', '.join(names[:-1])} and {names[-1]}"
    return f"BatchNormalization layers {', '.join(names[:shown])} and {len(names) - shown} more"
