"""Data-parallel training of Keras models with tf.distribute: one device, many GPUs, many machines.

  import tf_mgpu
  summary = tf_mgpu.train(task="my_task.py", strategy="mirrored", epochs=2, model_dir="/tmp/run")

`train` takes a task (a module or object with build_model() and load_data(),
or a name or path as `--task` takes it) and settings named like the flags of
`python -m tf_mgpu.main`; it runs the same engine and returns the summary.
Importing this package does not load TensorFlow; `train` does.
"""


def train(task="mnist_mlp", **settings) -> dict:
    """Trains `task` as `python -m tf_mgpu.main` would; returns the run's summary as a dict.

    Settings are the Config fields, named like the flags (`strategy`,
    `epochs`, `batch_size`, `learning_rate`, `model_dir`, ...); `model_dir`
    defaults to None: write nothing. A user error raises
    `tf_mgpu.errors.UserError` with the one line the command would print.
    Returns {} when `model_dir` already holds every epoch asked for.
    """
    from tf_mgpu import api

    return api.train(task, **settings)
