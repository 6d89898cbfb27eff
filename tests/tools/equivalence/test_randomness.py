"""tf_mgpu/tools/equivalence/randomness.py: what `check` and the zoo turn off to compare N
replicas with one device."""

import keras
import numpy as np
import tensorflow as tf

from tf_mgpu.tools.equivalence import randomness


def test_dropout_rnn_dropout_and_augmentation_layers_draw_nothing_once_turned_off():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.RandomFlip("horizontal", name="flip")(inputs)
    x = keras.layers.RandomRotation(0.1, name="rotation")(x)
    x = keras.layers.GaussianNoise(0.3, name="noise")(x)
    x = keras.layers.Reshape((8, 24))(x)
    x = keras.layers.LSTM(4, dropout=0.25, recurrent_dropout=0.1, name="lstm")(x)
    x = keras.layers.Dropout(0.5, name="dropout")(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    images = tf.constant(np.random.default_rng(0).random((2, 8, 8, 3)), tf.float32)

    def random_ops() -> set:
        step = tf.function(lambda: model(images, training=True), autograph=False)
        return {op.type for op in step.get_concrete_function().graph.get_operations()} & {
            "StatelessRandomUniformV2",
            "StatelessRandomNormalV2",
        }

    assert random_ops(), "nothing drew before"
    assert randomness.turn_off(model) == [
        "RandomFlip flip (as in inference)",
        "RandomRotation rotation (as in inference)",
        "GaussianNoise noise (stddev 0.3)",
        "LSTMCell lstm_cell (dropout 0.25)",
        "LSTMCell lstm_cell (recurrent_dropout 0.1)",
        "Dropout dropout (rate 0.5)",
    ]
    assert not random_ops()
    np.testing.assert_array_equal(model(images, training=True), model(images, training=False))
