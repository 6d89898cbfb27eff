# keras-io: examples/timeseries/eeg_bci_ssvepformer.py
"""SSVEPFormer for SSVEP EEG classification: synthetic EEG trials of 2 channels (cut from
8) x 32 samples (fs cut from 256 to 32 Hz) with labels 0-11 in place of the Nakanishi et
al. .mat files and their scipy filtering; resolution 0.5 Hz (from 0.25) and band [8, 14]
Hz (from [8, 64]) so the complex spectrum has 2 x 13 bins; the example sets
`image_data_format("channels_first")` globally, here its Conv1D layers are given
`data_format="channels_first"` instead; its layers take `**kwargs` and have
`get_config()` for saving."""

import keras
import numpy as np
from keras import layers

fs = 32  # sampling frequency
resolution = 0.5
band = [8, 14]  # low-frequency / high-frequency cutoffS
channels = 2
samples = 32
n_classes = 12

# Training settings same as the original paper
BATCH_SIZE = 128
LR = 0.001  # learning rate
WD = 0.001  # weight decay
MOMENTUM = 0.9
DROP_RATE = 0.5


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class ComplexSpectrum(keras.layers.Layer):
    def __init__(self, nfft=512, fft_start=8, fft_end=64, **kwargs):
        super().__init__(**kwargs)
        self.nfft = nfft
        self.fft_start = fft_start
        self.fft_end = fft_end

    def call(self, x):
        samples = x.shape[-1]
        x = keras.ops.rfft(x, fft_length=self.nfft)
        real = x[0] / samples
        imag = x[1] / samples
        real = real[:, :, self.fft_start : self.fft_end]
        imag = imag[:, :, self.fft_start : self.fft_end]
        x = keras.ops.concatenate((real, imag), axis=-1)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"nfft": self.nfft, "fft_start": self.fft_start, "fft_end": self.fft_end})
        return config


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class ChannelComb(keras.layers.Layer):
    def __init__(self, n_channels, drop_rate=0.5, **kwargs):
        super().__init__(**kwargs)
        self.n_channels = n_channels
        self.drop_rate = drop_rate
        self.conv = layers.Conv1D(
            2 * n_channels,
            1,
            padding="same",
            data_format="channels_first",
            kernel_initializer=keras.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=None),
        )
        self.normalization = layers.LayerNormalization()
        self.activation = layers.Activation(activation="gelu")
        self.drop = layers.Dropout(drop_rate)

    def call(self, x):
        x = self.conv(x)
        x = self.normalization(x)
        x = self.activation(x)
        x = self.drop(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"n_channels": self.n_channels, "drop_rate": self.drop_rate})
        return config


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class ConvAttention(keras.layers.Layer):
    def __init__(self, n_channels, drop_rate=0.5, **kwargs):
        super().__init__(**kwargs)
        self.n_channels = n_channels
        self.drop_rate = drop_rate
        self.norm = layers.LayerNormalization()
        self.conv = layers.Conv1D(
            2 * n_channels,
            31,
            padding="same",
            data_format="channels_first",
            kernel_initializer=keras.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=None),
        )
        self.activation = layers.Activation(activation="gelu")
        self.drop = layers.Dropout(drop_rate)

    def call(self, x):
        input = x
        x = self.norm(x)
        x = self.conv(x)
        x = self.activation(x)
        x = self.drop(x)
        x = x + input
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"n_channels": self.n_channels, "drop_rate": self.drop_rate})
        return config


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class ChannelMLP(keras.layers.Layer):
    def __init__(self, n_features, drop_rate=0.5, **kwargs):
        super().__init__(**kwargs)
        self.n_features = n_features
        self.drop_rate = drop_rate
        self.norm = layers.LayerNormalization()
        self.mlp = layers.Dense(
            2 * n_features,
            kernel_initializer=keras.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=None),
        )
        self.activation = layers.Activation(activation="gelu")
        self.drop = layers.Dropout(drop_rate)
        self.cat = layers.Concatenate(axis=1)

    def call(self, x):
        input = x
        channels = x.shape[1]  # x shape : NCF
        x = self.norm(x)
        output_channels = []
        for i in range(channels):
            c = self.mlp(x[:, :, i])
            c = layers.Reshape([1, -1])(c)
            output_channels.append(c)
        x = self.cat(output_channels)
        x = self.activation(x)
        x = self.drop(x)
        x = x + input
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"n_features": self.n_features, "drop_rate": self.drop_rate})
        return config


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class Encoder(keras.layers.Layer):
    def __init__(self, n_channels, n_features, drop_rate=0.5, **kwargs):
        super().__init__(**kwargs)
        self.n_channels = n_channels
        self.n_features = n_features
        self.drop_rate = drop_rate
        self.attention1 = ConvAttention(n_channels, drop_rate=drop_rate)
        self.mlp1 = ChannelMLP(n_features, drop_rate=drop_rate)
        self.attention2 = ConvAttention(n_channels, drop_rate=drop_rate)
        self.mlp2 = ChannelMLP(n_features, drop_rate=drop_rate)

    def call(self, x):
        x = self.attention1(x)
        x = self.mlp1(x)
        x = self.attention2(x)
        x = self.mlp2(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "n_channels": self.n_channels,
                "n_features": self.n_features,
                "drop_rate": self.drop_rate,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="zoo_eeg_bci_ssvepformer")
class MlpHead(keras.layers.Layer):
    def __init__(self, n_classes, drop_rate=0.5, **kwargs):
        super().__init__(**kwargs)
        self.n_classes = n_classes
        self.drop_rate = drop_rate
        self.flatten = layers.Flatten()
        self.drop = layers.Dropout(drop_rate)
        self.linear1 = layers.Dense(
            6 * n_classes,
            kernel_initializer=keras.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=None),
        )
        self.norm = layers.LayerNormalization()
        self.activation = layers.Activation(activation="gelu")
        self.drop2 = layers.Dropout(drop_rate)
        self.linear2 = layers.Dense(
            n_classes,
            kernel_initializer=keras.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=None),
        )

    def call(self, x):
        x = self.flatten(x)
        x = self.drop(x)
        x = self.linear1(x)
        x = self.norm(x)
        x = self.activation(x)
        x = self.drop2(x)
        x = self.linear2(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"n_classes": self.n_classes, "drop_rate": self.drop_rate})
        return config


def create_ssvepformer(input_shape, fs, resolution, fq_band, n_channels, n_classes, drop_rate):
    nfft = round(fs / resolution)
    fft_start = int(fq_band[0] / resolution)
    fft_end = int(fq_band[1] / resolution) + 1
    n_features = fft_end - fft_start

    model = keras.Sequential(
        [
            keras.Input(shape=input_shape),
            ComplexSpectrum(nfft, fft_start, fft_end),
            ChannelComb(n_channels=n_channels, drop_rate=drop_rate),
            Encoder(n_channels=n_channels, n_features=n_features, drop_rate=drop_rate),
            Encoder(n_channels=n_channels, n_features=n_features, drop_rate=drop_rate),
            MlpHead(n_classes=n_classes, drop_rate=drop_rate),
            layers.Activation(activation="softmax"),
        ]
    )

    return model


def build_model():
    input_shape = (channels, samples)
    model = create_ssvepformer(input_shape, fs, resolution, band, channels, n_classes, DROP_RATE)
    sgd = keras.optimizers.SGD(learning_rate=LR, momentum=MOMENTUM, weight_decay=WD)

    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=sgd,
        metrics=["accuracy"],
        jit_compile=True,
    )
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        # Each trial carries a sinusoid at its class's stimulation frequency plus noise.
        y = rng.integers(0, n_classes, size=(n,))
        t = np.arange(samples) / fs
        freqs = 8.25 + 0.5 * y
        phases = rng.uniform(0, 2 * np.pi, size=(n, channels))
        x = np.sin(2 * np.pi * freqs[:, None, None] * t[None, None, :] + phases[:, :, None])
        x = x + rng.normal(scale=1.0, size=x.shape)
        # trials x channels x samples; labels as float32 as the example's Y
        return x.astype(np.float32), y.astype(np.float32)

    return split(128), split(64)
