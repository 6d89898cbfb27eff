"""The seed's network and optimizer, as Keras 3 objects.

Both must be built inside `strategy.scope()`: that is what makes their
variables mirrored, one synchronised copy per replica.
"""

import keras


def build_model() -> keras.Model:
    """Flatten 28x28 -> Dense 128 relu -> Dense 10; outputs logits."""
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ],
        name="mnist_mlp",
    )


def build_optimizer(learning_rate: float) -> keras.optimizers.Optimizer:
    """Plain SGD, the seed's optimizer."""
    return keras.optimizers.SGD(learning_rate=learning_rate)
