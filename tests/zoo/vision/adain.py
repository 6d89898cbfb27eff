# keras-io: examples/vision/adain.py
"""Neural style transfer with AdaIN, its own train_step and test_step: synthetic float32
(style, content) image pairs in [0, 1] of 32x32x3 in place of the artwork and Pascal VOC
downloads (224x224); a VGG19 of the same layers and names, widths divided by 8, no weights,
in place of keras.applications.VGG19 with ImageNet weights (the real one, even at 32x32,
took 5 s a step here); decoder widths cut from 512/256/128/64 to 32/16/16/8;
get_config/from_config and get_compile_config/compile_from_config so the model can be saved
and reloaded; the model, which has no call(), is marked built once its parts are built."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

# Defining the global variables.
IMAGE_SIZE = (32, 32)


def small_vgg19(include_top=False, weights=None, input_shape=None):
    """keras.applications.VGG19(include_top=False) layer for layer, widths divided by 8."""
    inputs = layers.Input(input_shape)
    x = inputs
    for block, (filters, convs) in enumerate([(8, 2), (16, 2), (32, 4), (64, 4), (64, 4)], 1):
        for conv in range(1, convs + 1):
            x = layers.Conv2D(
                filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{conv}"
            )(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    return keras.Model(inputs, x, name="vgg19")


def get_encoder():
    vgg19 = small_vgg19(
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
    mean, variance = tf.nn.moments(x, axes=axes, keepdims=True)
    standard_deviation = tf.sqrt(variance + epsilon)
    return mean, standard_deviation


def ada_in(style, content):
    """Computes the adaptive instance normalized feature map from the style and
    content feature map.

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
            layers.InputLayer((None, None, 64)),
            layers.Conv2D(filters=32, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=16, **config),
            layers.Conv2D(filters=16, **config),
            layers.Conv2D(filters=16, **config),
            layers.Conv2D(filters=16, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=16, **config),
            layers.Conv2D(filters=16, **config),
            layers.UpSampling2D(),
            layers.Conv2D(filters=8, **config),
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
    vgg19 = small_vgg19(include_top=False, weights=None, input_shape=(*IMAGE_SIZE, 3))
    vgg19.trainable = False
    layer_names = ["block1_conv1", "block2_conv1", "block3_conv1", "block4_conv1"]
    outputs = [vgg19.get_layer(name).output for name in layer_names]
    mini_vgg19 = keras.Model(vgg19.input, outputs)

    inputs = layers.Input([*IMAGE_SIZE, 3])
    mini_vgg19_out = mini_vgg19(inputs)
    return keras.Model(inputs, mini_vgg19_out, name="loss_net")


@keras.saving.register_keras_serializable(package="zoo_adain")
class NeuralStyleTransfer(tf.keras.Model):
    def __init__(self, encoder, decoder, loss_net, style_weight, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.loss_net = loss_net
        self.style_weight = style_weight

    def compile(self, optimizer, loss_fn):
        super().compile()
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.style_loss_tracker = keras.metrics.Mean(name="style_loss")
        self.content_loss_tracker = keras.metrics.Mean(name="content_loss")
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")

    def train_step(self, inputs):
        style, content = inputs

        # Initialize the content and style loss.
        loss_content = 0.0
        loss_style = 0.0

        with tf.GradientTape() as tape:
            # Encode the style and content image.
            style_encoded = self.encoder(style)
            content_encoded = self.encoder(content)

            # Compute the AdaIN target feature maps.
            t = ada_in(style=style_encoded, content=content_encoded)

            # Generate the neural style transferred image.
            reconstructed_image = self.decoder(t)

            # Compute the losses.
            reconstructed_vgg_features = self.loss_net(reconstructed_image)
            style_vgg_features = self.loss_net(style)
            loss_content = self.loss_fn(t, reconstructed_vgg_features[-1])
            for inp, out in zip(style_vgg_features, reconstructed_vgg_features, strict=False):
                mean_inp, std_inp = get_mean_std(inp)
                mean_out, std_out = get_mean_std(out)
                loss_style += self.loss_fn(mean_inp, mean_out) + self.loss_fn(std_inp, std_out)
            loss_style = self.style_weight * loss_style
            total_loss = loss_content + loss_style

        # Compute gradients and optimize the decoder.
        trainable_vars = self.decoder.trainable_variables
        gradients = tape.gradient(total_loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars, strict=False))

        # Update the trackers.
        self.style_loss_tracker.update_state(loss_style)
        self.content_loss_tracker.update_state(loss_content)
        self.total_loss_tracker.update_state(total_loss)
        return {
            "style_loss": self.style_loss_tracker.result(),
            "content_loss": self.content_loss_tracker.result(),
            "total_loss": self.total_loss_tracker.result(),
        }

    def test_step(self, inputs):
        style, content = inputs

        # Initialize the content and style loss.
        loss_content = 0.0
        loss_style = 0.0

        # Encode the style and content image.
        style_encoded = self.encoder(style)
        content_encoded = self.encoder(content)

        # Compute the AdaIN target feature maps.
        t = ada_in(style=style_encoded, content=content_encoded)

        # Generate the neural style transferred image.
        reconstructed_image = self.decoder(t)

        # Compute the losses.
        recons_vgg_features = self.loss_net(reconstructed_image)
        style_vgg_features = self.loss_net(style)
        loss_content = self.loss_fn(t, recons_vgg_features[-1])
        for inp, out in zip(style_vgg_features, recons_vgg_features, strict=False):
            mean_inp, std_inp = get_mean_std(inp)
            mean_out, std_out = get_mean_std(out)
            loss_style += self.loss_fn(mean_inp, mean_out) + self.loss_fn(std_inp, std_out)
        loss_style = self.style_weight * loss_style
        total_loss = loss_content + loss_style

        # Update the trackers.
        self.style_loss_tracker.update_state(loss_style)
        self.content_loss_tracker.update_state(loss_content)
        self.total_loss_tracker.update_state(total_loss)
        return {
            "style_loss": self.style_loss_tracker.result(),
            "content_loss": self.content_loss_tracker.result(),
            "total_loss": self.total_loss_tracker.result(),
        }

    @property
    def metrics(self):
        return [
            self.style_loss_tracker,
            self.content_loss_tracker,
            self.total_loss_tracker,
        ]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "decoder": keras.saving.serialize_keras_object(self.decoder),
                "loss_net": keras.saving.serialize_keras_object(self.loss_net),
                "style_weight": self.style_weight,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        for key in ("encoder", "decoder", "loss_net"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
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
    # The model has no call(); its parts are built, so mark it built for count_params/save.
    model.built = True
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        style = rng.random((n, *IMAGE_SIZE, 3), dtype=np.float32)
        content = rng.random((n, *IMAGE_SIZE, 3), dtype=np.float32)
        return style, content

    return split(128), split(64)
