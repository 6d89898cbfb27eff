"""The benchmark's reference training loops, each run alone in its own process.

- `seed_torch`: the seed tutorial's PyTorch loop, on the CPU.
- `keras_fit`: the straightforward Keras port, `model.fit` under MirroredStrategy.
- `xla_floor`: the fastest plain TensorFlow loop for this model: no strategy, no
  Keras, one XLA call per epoch.

Every loop returns the same dict (`tf_mgpu.tools.benchmarks.reference_loop`), as do the
task's loops of `tf_mgpu.tools.benchmarks.task_fit`, which `run` starts too.

TensorFlow and torch are imported inside the loops that use them: the seed's
process must not pay for importing TensorFlow, nor the others for torch.
"""

import gzip
import json
import os
import time

import numpy as np

from tf_mgpu import strict_json
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import splits
from tf_mgpu.tools.benchmarks.reference_loop import BATCH_SIZE, epoch_timer, result

REFERENCES = (
    "seed_torch",
    "keras_fit",
    "xla_floor",
    "keras_fit_task",
    "keras_fit_task_bf16",
    "task_floor",
)
RESULT_PREFIX = "tf_mgpu bench result: "
LEARNING_RATE = 0.01

# The original files, by split, as the seed's torchvision reads them.
_IDX_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def run(
    name: str,
    *,
    manual_dir: str,
    data_dir: str | None,
    epochs: int,
    train_split: str,
    test_split: str,
    task: str = "mnist_mlp",
) -> dict:
    """Runs the reference loop `name` (one of REFERENCES) and returns its result dict."""
    if name == "seed_torch":
        return seed_torch(manual_dir, epochs, train_split, test_split)
    if name == "keras_fit":
        return keras_fit(data_dir, manual_dir, epochs, train_split, test_split)
    if name == "keras_fit_task":
        # Here, not at the top: task_fit imports the engine, so TensorFlow (which
        # seed_torch's process must not load); task_fit imports nothing of this module.
        from tf_mgpu.tools.benchmarks import task_fit

        return task_fit.keras_fit_task(task, data_dir, manual_dir, epochs, train_split, test_split)
    if name == "keras_fit_task_bf16":
        from tf_mgpu.tools.benchmarks import task_fit

        return task_fit.keras_fit_task(
            task, data_dir, manual_dir, epochs, train_split, test_split, "mixed_bfloat16"
        )
    if name == "task_floor":
        from tf_mgpu.tools.benchmarks import task_fit

        return task_fit.task_floor(task, data_dir, manual_dir, epochs, train_split, test_split)
    if name == "xla_floor":
        return xla_floor(data_dir, manual_dir, epochs, train_split, test_split)
    raise UserError(f"unknown reference loop {name!r}; choose one of {', '.join(REFERENCES)}")


def result_line(result: dict) -> str:
    """The one line a reference process prints for the benchmark to parse."""
    return RESULT_PREFIX + strict_json.dumps(result)


def parse_result(stdout: str) -> dict:
    """The result dict from a reference process's output; ValueError if it has none."""
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise ValueError(f"no line starting with {RESULT_PREFIX!r} in the output")


def split_slice(spec: str, sizes: dict[str, int]) -> tuple[str, slice]:
    """('train' or 'test', a slice) for a TFDS split spec: 'train', 'test[:1000]', 'train[:10%]'.

    Percentages round to the closest example, as TFDS does. Only the forms
    above are understood; anything else is a UserError.
    """
    found = splits.simple_slice(spec, sizes)
    if found is None:
        raise UserError(
            f"split {spec!r} is not understood by the seed loop; use 'train', 'test' "
            f"or a slice such as 'train[:4096]' or 'train[:10%]'"
        )
    return found


def read_idx(manual_dir: str, spec: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, 28, 28) uint8 and labels (N,) int64 of a split, from the original .gz files.

    A slice selects positions of the original files' order; TFDS stores its
    own order, so on a slice the seed loop sees other examples than the
    TensorFlow loops (on whole splits, the same ones).
    """
    name, where = split_slice(spec, {"train": 60_000, "test": 10_000})
    images_file, labels_file = (os.path.join(manual_dir, f) for f in _IDX_FILES[name])
    with gzip.open(images_file) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(labels_file) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    # Copies: the buffers are read-only, and a slice should not keep the whole split.
    return images[where].copy(), labels[where].copy()


def seed_torch(
    manual_dir: str, epochs: int, train_split: str = "train", test_split: str = "test"
) -> dict:
    """The seed tutorial's loop, faithfully, on the CPU; then test accuracy.

    `nn.DataParallel(Net())`, a shuffling DataLoader at batch 64 with the
    default single process, SGD at lr 0.01, a new `nn.CrossEntropyLoss()`
    per step, `model.train()` per epoch. The dataset returns what
    `datasets.MNIST(transform=transforms.ToTensor())` returns, without
    torchvision's PIL round trip, so if anything this loop is faster than
    the seed's.
    """
    try:
        import torch
        from torch import nn, optim
    except ImportError:
        raise UserError("the seed_torch loop needs torch: pip install -e '.[bench]'") from None
    train_loader = torch.utils.data.DataLoader(
        torch_dataset(*read_idx(manual_dir, train_split)), batch_size=BATCH_SIZE, shuffle=True
    )
    model = nn.DataParallel(_torch_net())
    optimizer = optim.SGD(model.parameters(), lr=LEARNING_RATE)
    epoch_seconds = []
    for _ in range(epochs):
        started = time.perf_counter()
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            output = model(data)
            loss = nn.CrossEntropyLoss()(output, target)
            loss.backward()
            optimizer.step()
        epoch_seconds.append(time.perf_counter() - started)  # torch on CPU is synchronous
    test_images, test_labels = read_idx(manual_dir, test_split)
    model.eval()
    with torch.no_grad():
        inputs = torch.from_numpy(test_images).float().div(255).unsqueeze(1)
        predicted = model(inputs).argmax(dim=1).numpy()
    accuracy = float(np.mean(predicted == test_labels))
    return result(epoch_seconds, len(train_loader.dataset), accuracy)


def _torch_net():
    """The seed's `Net`: 784 -> 128 relu -> 10."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(28 * 28, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.view(-1, 28 * 28)
            x = torch.relu(self.fc1(x))
            return self.fc2(x)

    return Net()


def torch_dataset(images: np.ndarray, labels: np.ndarray):
    """A Dataset whose items are (float32 tensor (1, 28, 28) in [0, 1], int label)."""
    import torch

    class Mnist(torch.utils.data.Dataset):
        def __init__(self):
            self.images = torch.from_numpy(images)
            self.labels = labels.tolist()

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, index):
            return self.images[index].unsqueeze(0).float().div(255), self.labels[index]

    return Mnist()


def keras_fit(
    data_dir: str | None,
    manual_dir: str,
    epochs: int,
    train_split: str = "train",
    test_split: str = "test",
) -> dict:
    """The straightforward Keras port: `model.fit` under MirroredStrategy, then `evaluate`.

    In-memory tf.data, reshuffled every epoch, batch 64; Keras's own defaults
    otherwise (no XLA under a strategy), no progress output.
    """
    import tensorflow as tf

    from tf_mgpu.tasks import mnist_mlp
    from tf_mgpu.tasks.mnist import data

    mnist = data.load(data_dir, manual_dir, train_split, test_split)
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        net = mnist_mlp.build_model()  # compiled: SGD at 0.01, the seed's recipe
        net.optimizer.learning_rate = LEARNING_RATE
    timer = epoch_timer()
    train = _keras_dataset(mnist.train, shuffle=True)
    # The dataset reshuffles itself; fit's own `shuffle` applies to arrays only.
    net.fit(train, epochs=epochs, callbacks=[timer], shuffle=False, verbose=0)
    _, accuracy = net.evaluate(_keras_dataset(mnist.test, shuffle=False), verbose=0)
    return result(timer.seconds, len(mnist.train), float(accuracy))


def _keras_dataset(split, shuffle: bool):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((split.x.astype(np.float32) / 255.0, split.y))
    if shuffle:
        dataset = dataset.shuffle(60_000, reshuffle_each_iteration=True)
    return dataset.batch(BATCH_SIZE)


def xla_floor(
    data_dir: str | None,
    manual_dir: str,
    epochs: int,
    train_split: str = "train",
    test_split: str = "test",
    seed: int = 0,
) -> dict:
    """The fastest plain TensorFlow loop for this model: each epoch is one XLA call.

    The two layers are tf.Variables (Glorot-uniform kernels, zero biases); the
    training split stays resident as uint8; each epoch visits
    `data.epoch_order(n, seed, epoch)` in full batches of 64, with plain SGD.
    Every shape is static (see notes/xla-under-tf-distribute.md): each step
    gathers `order[step * 64 + range(64)]` and the order is an argument, so the
    epoch compiles once.
    """
    import tensorflow as tf

    from tf_mgpu.engine.input import data
    from tf_mgpu.tasks.mnist.data import load

    mnist = load(data_dir, manual_dir, train_split, test_split)
    steps = data.steps_per_epoch(len(mnist.train), BATCH_SIZE)
    variables = _dense_variables(seed)
    train_epoch = _xla_epoch(variables, steps)
    images, labels = tf.constant(mnist.train.x), tf.constant(mnist.train.y)
    epoch_seconds = []
    for epoch in range(epochs):
        started = time.perf_counter()
        float(train_epoch(images, labels, data.epoch_order(len(mnist.train), seed, epoch)))
        epoch_seconds.append(time.perf_counter() - started)
    logits = tf.function(jit_compile=True)(lambda x: _logits(variables, x))
    predicted = logits(tf.constant(mnist.test.x)).numpy().argmax(axis=1)
    accuracy = float(np.mean(predicted == mnist.test.y))
    return result(epoch_seconds, steps * BATCH_SIZE, accuracy)


def _dense_variables(seed: int) -> list:
    """Kernel and bias of Dense 784 -> 128 and Dense 128 -> 10, initialised as Keras does."""
    import tensorflow as tf

    variables = []
    for index, (fan_in, fan_out) in enumerate(((784, 128), (128, 10))):
        limit = (6 / (fan_in + fan_out)) ** 0.5
        kernel = tf.random.stateless_uniform(
            (fan_in, fan_out), seed=(seed, index), minval=-limit, maxval=limit
        )
        variables += [tf.Variable(kernel), tf.Variable(tf.zeros(fan_out))]
    return variables


def _logits(variables: list, images):
    """The model on uint8 images (B, 28, 28)."""
    import tensorflow as tf

    kernel1, bias1, kernel2, bias2 = variables
    x = tf.reshape(tf.cast(images, tf.float32) / 255.0, (-1, 784))
    return tf.nn.relu(x @ kernel1 + bias1) @ kernel2 + bias2


def _xla_epoch(variables: list, steps: int):
    """A jit-compiled function: `steps` SGD steps over `order`; returns the summed loss."""
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def train_epoch(images, labels, order):
        total = tf.constant(0.0)
        for step in tf.range(steps):
            index = tf.gather(order, step * BATCH_SIZE + tf.range(BATCH_SIZE))
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=tf.gather(labels, index),
                        logits=_logits(variables, tf.gather(images, index)),
                    )
                )
            for variable, gradient in zip(variables, tape.gradient(loss, variables), strict=True):
                variable.assign_sub(LEARNING_RATE * gradient)
            total += loss
        return total

    return train_epoch
