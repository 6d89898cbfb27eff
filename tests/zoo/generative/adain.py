# keras-io: examples/generative/adain.py
"""Adapted: synthetic style and content images in [0, 1] replace the artwork and Pascal VOC
folders read by the PyDataset (which yields `((style, content),)`, so fit gets x and no
y); IMAGE_SIZE 224 -> 32 (VGG19's smallest input); VGG19 with weights=None in place of the
ImageNet weights; decoder filters cut by 4 (512/256/128/64 -> 128/64/32/16);
NeuralStyleTransfer is registered and gets get_config()/from_config() and
get_compile_config()/compile_from_config() so that the model reloads compiled; the
TrainMonitor plots are dropped."""

import keras
import numpy as np
from keras import layers

PACKAGE = "zoo_adain"

IMAGE_SIZE = (32, 32)


def get_encoder():
    vgg19 = keras.applications.VGG19(
        include_top=False,
        weights=None,
        input_shape=(*IMAGE_SIZE, 3),
    )
    vgg19.trainable = False
    mini_vgg19 = keras.Model(vgg19.input, vgg19.get_layer("block4_conv1").output)

    inputs = layers.Input([*IMAGE_SIZE, 3])
    mini_vgg19_out = mini_vgg19(inputs)
    return keras.Model(inputs, mini_vgg19_out, name="mini_vgg19")


def get_mean_std(x, epsilon=1e-5):
    axes = [1, 2]

    # Compute the mean and standard deviation of a tensor.
    mean, variance = keras.ops.moments(x, axes=axes, keepdims=True)
    standard_deviation = keras.ops.sqrt(variance + epsilon)
    return mean, standard_deviation


def ada_in(style, content):
    """Computes the AdaIn feature map.

    Args:
        style: The style feature map.
        content: The content feature map.

    Returns:
        The AdaIN feature map.
    """
    content_mean, content_std = get_mean_std(content)
    style_mean, style_std = get_mean_std(style)
    t = style_std * (content - content_mean) / content_std + style_mean
    return t


def get_decoder():
    config = {"kernel_size": 3, "strides": 1, "padding": "same", "activation": "relu"}
    decoder = keras.Sequential(
        [
            layers.InputLayer((None, None, 512)),
            layers.Conv2D(filters=128, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=64, **config),
            layers.Conv2D(filters=64, **config),
            layers.Conv2D(filters=64, **config),
            layers.Conv2D(filters=64, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=32, **config),
            layers.Conv2D(filters=32, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=16, **config),
            layers.Conv2D(
                filters=3,
                kernel_size=3,
                strides=1,
                padding="same",
                activation="sigmoid",
            ),
        ]
    )
    return decoder


def get_loss_net():
    vgg19 = keras.applications.VGG19(include_top=False, weights=None, input_shape=(*IMAGE_SIZE, 3))
    vgg19.trainable = False
    layer_names = ["block1_conv1", "block2_conv1", "block3_conv1", "block4_conv1"]
    outputs = [vgg19.get_layer(name).output for name in layer_names]
    mini_vgg19 = keras.Model(vgg19.input, outputs)

    inputs = layers.Input([*IMAGE_SIZE, 3])
    mini_vgg19_out = mini_vgg19(inputs)
    return keras.Model(inputs, mini_vgg19_out, name="loss_net")


@keras.saving.register_keras_serializable(package=PACKAGE)
class NeuralStyleTransfer(keras.Model):
    def __init__(self, encoder, decoder, loss_net, style_weight, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.loss_net = loss_net
        self.style_weight = style_weight

        self.style_loss_tracker = keras.metrics.Mean(name="style_loss")
        self.content_loss_tracker = keras.metrics.Mean(name="content_loss")
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")

    def compile(self, optimizer, loss_fn, **kwargs):
        super().compile(optimizer=optimizer, **kwargs)
        self.loss_fn = loss_fn

    def call(self, inputs, training=False):
        style, content = inputs

        # Encode style and content, then construct AdaIN target.
        style_encoded = self.encoder(style, training=False)
        content_encoded = self.encoder(content, training=False)
        target_features = ada_in(style=style_encoded, content=content_encoded)

        # Decode back into image space.
        reconstructed_image = self.decoder(target_features, training=training)

        return {
            "reconstructed_image": reconstructed_image,
            "target_features": target_features,
            "style": style,
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        # Loss content comes from target AdaIN features vs reconstructed features.
        reconstructed_vgg_features = self.loss_net(y_pred["reconstructed_image"], training=False)
        style_vgg_features = self.loss_net(y_pred["style"], training=False)

        loss_content = self.loss_fn(y_pred["target_features"], reconstructed_vgg_features[-1])

        # Style loss matches means/variances at each VGG feature level.
        loss_style = 0.0
        for inp, out in zip(style_vgg_features, reconstructed_vgg_features):  # noqa: B905 (as in the example)
            mean_inp, std_inp = get_mean_std(inp)
            mean_out, std_out = get_mean_std(out)
            loss_style += self.loss_fn(mean_inp, mean_out) + self.loss_fn(std_inp, std_out)
        loss_style = self.style_weight * loss_style

        total_loss = loss_content + loss_style

        # Update trackers for progress logs.
        self.style_loss_tracker.update_state(loss_style)
        self.content_loss_tracker.update_state(loss_content)
        self.total_loss_tracker.update_state(total_loss)

        return total_loss

    @property
    def metrics(self):
        return [
            self.style_loss_tracker,
            self.content_loss_tracker,
            self.total_loss_tracker,
        ]

    def get_config(self):
        config = super().get_config()
        for name in ("encoder", "decoder", "loss_net"):
            config[name] = keras.saving.serialize_keras_object(getattr(self, name))
        config["style_weight"] = self.style_weight
        return config

    @classmethod
    def from_config(cls, config):
        for name in ("encoder", "decoder", "loss_net"):
            config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)

    def get_compile_config(self):
        return {
            "optimizer": keras.saving.serialize_keras_object(self.optimizer),
            "loss_fn": keras.saving.serialize_keras_object(self.loss_fn),
        }

    def compile_from_config(self, config):
        self.compile(
            optimizer=keras.saving.deserialize_keras_object(config["optimizer"]),
            loss_fn=keras.saving.deserialize_keras_object(config["loss_fn"]),
        )
        if self.built:
            self.optimizer.build(self.trainable_variables)


def build_model():
    optimizer = keras.optimizers.Adam(learning_rate=1e-5)
    loss_fn = keras.losses.MeanSquaredError()

    encoder = get_encoder()
    loss_net = get_loss_net()
    decoder = get_decoder()

    model = NeuralStyleTransfer(
        encoder=encoder, decoder=decoder, loss_net=loss_net, style_weight=4.0
    )

    model.compile(optimizer=optimizer, loss_fn=loss_fn)
    return model


def load_data():
    rng = np.random.default_rng(0)
    train = [rng.random((128, *IMAGE_SIZE, 3), dtype=np.float32) for _ in range(2)]
    test = [rng.random((64, *IMAGE_SIZE, 3), dtype=np.float32) for _ in range(2)]
    return (train, None), (test, None)
