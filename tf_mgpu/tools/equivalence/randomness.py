"""A model's training-only randomness turned off, so that N replicas can be compared with one
device: each replica draws its own dropout masks and augmentations by design (from the
run's seed), so with them on the two sides cannot agree, and with them off any difference is
the distribution's.

Turned off are the layers that draw in training and are their inference selves otherwise:
dropout-like layers (a `rate` or `stddev`: Dropout, SpatialDropout, GaussianNoise, an RNN
cell's `dropout` and `recurrent_dropout`), set to 0; and Keras's random augmentation layers
(RandomFlip, RandomRotation, RandomZoom, RandomCrop...: a layer with a SeedGenerator and a
`get_random_transformation`), which then call as in inference. Random numbers a train_step
or a layer draws in its own code (a GAN's noise, stochastic depth) stay: `check` and the zoo
name them as random ops.
"""

import keras

from tf_mgpu.engine.model.layers import every_layer

_RATES = ("rate", "stddev", "dropout", "recurrent_dropout")


def turn_off(model: keras.Model) -> list[str]:
    """Turns off `model`'s training-only randomness in place (see the module's docstring);
    returns what was turned off, one entry a layer and setting."""
    found = []
    for layer in every_layer(model):
        if not _draws(layer):
            continue
        for attribute in _RATES:
            value = getattr(layer, attribute, None)
            if isinstance(value, float) and value > 0:
                setattr(layer, attribute, 0.0)
                found.append(f"{type(layer).__name__} {layer.name} ({attribute} {value:g})")
        # RandomCrop in inference returns the image uncropped (Keras 3.15), of another shape
        # than in training: left drawing (named as a random op).
        augments = callable(getattr(layer, "get_random_transformation", None))
        if augments and not isinstance(layer, keras.layers.RandomCrop):
            _as_in_inference(layer)
            found.append(f"{type(layer).__name__} {layer.name} (as in inference)")
    return found


def _draws(layer: keras.Layer) -> bool:
    """Whether the layer holds a SeedGenerator of its own (Dropout's `seed_generator`, an
    augmentation layer's `generator`)."""
    return any(isinstance(v, keras.random.SeedGenerator) for v in vars(layer).values())


def _as_in_inference(layer: keras.Layer) -> None:
    call = layer.call

    def as_in_inference(*args, training=None, **kwargs):
        del training
        return call(*args, training=False, **kwargs)

    layer.call = as_in_inference
