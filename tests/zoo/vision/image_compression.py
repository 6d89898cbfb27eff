# keras-io: examples/vision/image_compression.py
"""The dense autoencoder (encoder and decoder sub-models) on synthetic MNIST-shaped data:
flattened 784-float images in [0, 1], the target being the input itself; sizes as in the
example. `shape=(INPUT_SHAPE)` and `shape=(2)` are written as tuples, since Keras 3
refuses a bare int."""

import numpy as np
from keras import layers
from keras.models import Model
from keras.optimizers import Adam

INPUT_SHAPE = 784


def get_encoder_model():
    x = layers.Input(shape=(INPUT_SHAPE,), name="encoder_input")

    encoder_dense_layer1 = layers.Dense(units=300, name="encoder_dense_1")(x)
    encoder_activ_layer1 = layers.LeakyReLU(name="encoder_leakyrelu_1")(encoder_dense_layer1)

    encoder_dense_layer2 = layers.Dense(units=2, name="encoder_dense_2")(encoder_activ_layer1)
    encoder_output = layers.LeakyReLU(name="encoder_output")(encoder_dense_layer2)

    encoder = Model(x, encoder_output, name="encoder_model")
    return encoder


def get_decoder_model():
    decoder_input = layers.Input(shape=(2,), name="decoder_input")

    decoder_dense_layer1 = layers.Dense(units=300, name="decoder_dense_1")(decoder_input)
    decoder_activ_layer1 = layers.LeakyReLU(name="decoder_leakyrelu_1")(decoder_dense_layer1)

    decoder_dense_layer2 = layers.Dense(units=INPUT_SHAPE, name="decoder_dense_2")(
        decoder_activ_layer1
    )
    decoder_output = layers.LeakyReLU(name="decoder_output")(decoder_dense_layer2)

    decoder = Model(decoder_input, decoder_output, name="decoder_model")
    return decoder


def get_autoencoder_model(encoder, decoder):
    ae_input = layers.Input(shape=(INPUT_SHAPE,), name="autoencoder_input")
    ae_encoder_output = encoder(ae_input)
    ae_decoder_output = decoder(ae_encoder_output)

    ae_model = Model(ae_input, ae_decoder_output, name="autoencoder")
    return ae_model


def build_model():
    encoder = get_encoder_model()
    decoder = get_decoder_model()
    autoencoder_model = get_autoencoder_model(encoder, decoder)
    autoencoder_model.compile(loss="mse", optimizer=Adam(learning_rate=0.0005))
    return autoencoder_model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, (n, 28, 28)).astype("float32") / 255.0
        x = np.reshape(x, (x.shape[0], np.prod(x.shape[1:])))
        return x, x

    return split(128), split(64)
