"""What devices tf_mgpu sees here, and what `--strategy=mirrored` would run on.

  python -m tf_mgpu.devices                     # GPUs, with name and compute capability
  python -m tf_mgpu.devices --num_cpu_devices=2 # the CPU split as main would split it

Prints TensorFlow's version and whether it was built with CUDA (and which CUDA and
cuDNN), each visible GPU, and the devices of one replica each under MirroredStrategy.
"""

from absl import app, flags

from tf_mgpu import cli

_NUM_CPU_DEVICES = flags.DEFINE_integer(
    "num_cpu_devices",
    1,
    "Split the CPU into this many logical devices, as main's flag does, before listing.",
    lower_bound=1,
)


def lines(num_cpu_devices: int = 1) -> list[str]:
    """The report, one line each; must run before any other TensorFlow op."""
    import tensorflow as tf

    from tf_mgpu.engine.distribute import devices

    build = tf.sysconfig.get_build_info()
    cuda = (
        f"built with CUDA {build.get('cuda_version', '?')}, cuDNN {build.get('cudnn_version', '?')}"
        if tf.test.is_built_with_cuda()
        else "built without CUDA (install the gpu extra: pip install -e '.[gpu]')"
    )
    found = [f"tf_mgpu devices: tensorflow {tf.__version__}, {cuda}"]
    devices.grow_gpu_memory(True)  # listing initialises the GPUs: take no more than needed
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        shown = ".".join(map(str, capability)) if capability else "?"
        name = details.get("device_name", "unknown")
        found.append(f"tf_mgpu devices: {gpu.name}: {name}, compute capability {shown}")
    if not gpus:
        found.append(
            "tf_mgpu devices: no GPU visible (CUDA_VISIBLE_DEVICES chooses which; the CUDA "
            "libraries come with the gpu extra: pip install -e '.[gpu]')"
        )
        devices.split_cpu(num_cpu_devices)
    replicas = devices.replica_devices()
    found.append(
        f"tf_mgpu devices: --strategy=mirrored would run {len(replicas)} "
        f"replica{'s' if len(replicas) > 1 else ''}: {', '.join(replicas)}"
    )
    return found


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    cli.quiet_tensorflow()
    for line in lines(_NUM_CPU_DEVICES.value):
        print(line, flush=True)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
