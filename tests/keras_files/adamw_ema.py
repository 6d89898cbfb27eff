"""AdamW keeping an exponential moving average of the weights (`use_ema=True`): Keras's `fit`
ends by setting the weights to that average. `EMA_OVERWRITE` is Keras's
`ema_overwrite_frequency` (None: only at the end)."""

import keras
import numpy as np

EMA_OVERWRITE = None


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(
            1e-2,
            weight_decay=1e-3,
            use_ema=True,
            ema_momentum=0.9,
            ema_overwrite_frequency=EMA_OVERWRITE,
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 3))).argmax(1)
    return (x[:1024], y[:1024]), (x[1024:], y[1024:])
