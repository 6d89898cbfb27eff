"""XLA's persistent compilation cache: a second run of the same program skips its compile.

TensorFlow keys each cached executable by a fingerprint of the XLA program
(so the model, the batch and the dtype, which all change the program, change
the key) but not by its own version or the CPU the code was compiled for.
The cache therefore lives in a folder named after both:
`<cache>/xla-tf<version>-<cpu>`, so another TensorFlow, or another machine
sharing the folder (an NFS home), never loads code that is not its own.

TensorFlow reads `TF_XLA_FLAGS` once, when it first sets up its devices (its
first op or device listing; absl's `app.run` lists them if TensorFlow was
imported before it): `enable` must come before that (main calls it before
TensorFlow loads).
This module imports no TensorFlow.
"""

import hashlib
import importlib.metadata
import os
import platform

OFF = ("", "none", "off")
FOLDER = "tf_mgpu_cache"  # in the TFDS data dir; tf_mgpu.tasks.mnist.cache keeps arrays there too
_FLAG = "--tf_xla_persistent_cache_directory"


def default_root(data_dir: str | None) -> str:
    """`tf_mgpu_cache` in the TFDS data dir (--data_dir, else TFDS's own default)."""
    tfds_dir = data_dir or os.environ.get("TFDS_DATA_DIR") or "~/tensorflow_datasets"
    return os.path.join(os.path.expanduser(tfds_dir), FOLDER)


def folder(root: str) -> str:
    """The cache folder for this TensorFlow on this CPU, under `root`."""
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return os.path.join(os.path.expanduser(root), f"xla-tf{version}-{_cpu()}")


def _cpu() -> str:
    """The machine and its instruction-set flags, hashed: code XLA compiled for one CPU may
    not run on another."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    digest = hashlib.sha256(f"{platform.machine()} {platform.processor()} {flags}".encode())
    return f"{platform.machine()}-{digest.hexdigest()[:10]}"


def enable(setting: str | None, data_dir: str | None) -> str | None:
    """Points XLA's persistent cache at the folder `setting` names (None: the default
    root; one of OFF: no cache). Returns the folder, or None when off or unwritable.

    A TF_XLA_FLAGS that already names a cache directory wins: the user set it.
    """
    existing = os.environ.get("TF_XLA_FLAGS", "")
    if setting is not None and setting.strip().lower() in OFF:
        return None
    if _FLAG in existing:
        return None
    path = folder(setting or default_root(data_dir))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None  # a read-only data dir: compile every time, as without the cache
    os.environ["TF_XLA_FLAGS"] = f"{existing} {_FLAG}={path}".strip()
    return path
