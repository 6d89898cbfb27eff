"""The built-in task mnist_cnn, the keras.io "simple MNIST convnet", trains from its name."""

import keras

from tests.support import cpu_strategy
from tf_mgpu import training
from tf_mgpu.config import Config
from tf_mgpu.tasks import mnist_cnn


def test_the_keras_io_convnet_architecture():
    model = mnist_cnn.build_model()
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds == [
        "Conv2D",
        "MaxPooling2D",
        "Conv2D",
        "MaxPooling2D",
        "Flatten",
        "Dropout",
        "Dense",
    ]
    assert model.count_params() == 34_826  # as keras.io's summary lists it
    assert isinstance(model.optimizer, keras.optimizers.Adam)


def test_mnist_cnn_trains_by_name_on_two_replicas(mnist_data_dir):
    config = Config(
        task="mnist_cnn",
        data_dir=mnist_data_dir,
        train_split="train[:2048]",
        test_split="test[:300]",
        epochs=1,
        batch_size=32,
        jit_compile=False,
    )
    summary = training.run(config, strategy=cpu_strategy(2)).summary
    assert summary["test_examples"] == 300
    assert summary["test_accuracy"] > 0.6, summary["test_accuracy"]
