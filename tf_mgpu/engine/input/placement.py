"""Where a task's arrays are served from: held on every replica's device where they fit,
else read by index from host memory (or from the files of an np.memmap).

`--input` chooses (the start line names the choice and why):
- `auto` (the default): `resident` if the arrays fit the budget below, else `index`;
  always `index` for arrays mapped from files (np.memmap, np.load's mmap_mode),
  which are never read whole.
- `resident`: each split copied onto every replica's device (`loop.ResidentTrain`),
  the fast path: nothing crosses from host to device per step.
- `index`: each split an `arrays.ArraySource`: a tf.data pipeline per worker gathers
  its replicas' rows with NumPy from the arrays where they are, in the resident path's
  order, so both paths take the same steps (and resume each other's checkpoints).
- `stream`: the arrays as tf.data pipelines (`data.train_dataset`), each worker
  holding them whole.
A split given as a tf.data.Dataset or a source read by index streams, whatever
`--input` says.

"Fits": resident holds one copy of every split (train, validation and test) per local
replica: on each GPU, one copy in its memory; on CPU devices, one copy per replica in
the host memory they share. The budget is `HEADROOM` (half) of that memory, the rest
left to the model, its activations and TensorFlow (and, on CPU, the arrays as loaded):
a GPU's memory as its logical device configuration limits it, else as `nvidia-smi`
reports it (resident if neither says); the host's physical memory, or the cgroup's
limit if lower. `TF_MGPU_RESIDENT_BUDGET` (bytes; K, M, G suffixes) replaces the
budget (tests force the choice with it). Workers of a cluster agree: if the arrays do
not fit on one, every worker reads them by index (their compiled loops must match).
TensorFlow's 2 GB limit on a graph's constants does not apply: the resident copies are
eager tensors captured by the compiled loop (a 2.3 GB uint8 array runs resident, and
streamed, on CPU: measured).
"""

import dataclasses
import os
import subprocess

import tensorflow as tf

from tf_mgpu.engine.distribute import strategies
from tf_mgpu.engine.input import arrays, checks, data, source, stream
from tf_mgpu.errors import UserError

HEADROOM = 0.5  # the fraction of a device's (or the host's) memory resident copies may take
BUDGET_ENV = "TF_MGPU_RESIDENT_BUDGET"
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclasses.dataclass(frozen=True)
class Placement:
    input: str  # "resident", "index" or "stream"
    datasets: data.Data
    reason: str

    def describe(self) -> str:
        return f"{self.input} ({self.reason})"


def place(
    requested: str, strategy: tf.distribute.Strategy, datasets: data.Data, where: str
) -> Placement:
    """How `datasets` are served under `--input=requested` ("auto", "resident", "index" or
    "stream"), and the datasets to train on (arrays become `ArraySource`s for "index")."""
    if stream.streams(datasets):
        kind = "a source read by index" if _has_source(datasets) else "a tf.data.Dataset"
        return Placement("stream", datasets, f"load_data() returns {kind}")
    mapped = _mapped(datasets)
    if requested == "index":
        return Placement("index", _by_index(datasets, where), "--input=index: from host memory")
    if requested in ("resident", "stream"):
        if mapped:  # read whole anyway: scanned whole, as arrays in memory are
            checks.check_finite(datasets, where, mapped=True)
        return Placement(requested, datasets, f"--input={requested}")
    if requested != "auto":
        raise UserError(f"--input={requested} is not one of auto, resident, index, stream")
    if mapped:
        return Placement(
            "index",
            _by_index(datasets, where),
            f"auto: {mapped} is memory-mapped (np.memmap), read by index, never whole",
        )
    return _by_size(strategy, datasets, where)


def _by_size(strategy, datasets: data.Data, where: str) -> Placement:
    local = strategies.devices_of(strategy)
    gpus = all("GPU" in d.upper() for d in local)
    copies = 1 if gpus else len(local)
    needed = copies * sum(arrays.nbytes(split) for _, split in _splits(datasets))
    limit, of_what = budget(gpus)
    sizes = " + ".join(f"{name} {size(arrays.nbytes(split))}" for name, split in _splits(datasets))
    if not gpus:
        replicas = f"{len(local)} replica" + ("s" if len(local) > 1 else "")
        sizes = f"({sizes}) x {replicas}" if len(_splits(datasets)) > 1 else f"{sizes} x {replicas}"
    fits = limit is None or needed <= limit  # no budget known: resident, as before
    if strategies.name_of(strategy) == "multi_worker_mirrored":
        # Every worker decides alike (their loops must match): by index if any must. Every
        # worker joins this all-reduce, whatever it found, or the collectives misalign.
        over = strategies.replica_sum(strategy)(0.0 if fits else 1.0)
        if fits and over > 0:
            return Placement(
                "index",
                _by_index(datasets, where),
                f"auto: {sizes} fits here ({of_what}), but not on another worker: read by "
                f"index from host memory",
            )
    if limit is None:
        return Placement("resident", datasets, f"auto: {sizes}; {of_what}")
    if fits:
        return Placement("resident", datasets, f"auto: {sizes} fits in {size(limit)}, {of_what}")
    return Placement(
        "index",
        _by_index(datasets, where),
        f"auto: {sizes} > {size(limit)}, {of_what}: read by index from host memory",
    )


def budget(gpus: bool) -> tuple[int | None, str]:
    """(bytes resident copies may take, what that is): on each GPU (`gpus`), or in host
    memory for all local replicas; None where a GPU's memory is unknown."""
    given = os.environ.get(BUDGET_ENV)
    if given:
        return parse_bytes(given), f"${BUDGET_ENV}"
    if gpus:
        total = _gpu_bytes()
        if total is None:
            return None, "each GPU's memory is unknown (nvidia-smi did not say): kept resident"
        return int(HEADROOM * total), f"half of each GPU's {size(total)}"
    total = _host_bytes()
    return int(HEADROOM * total), f"half the host's {size(total)}"


def parse_bytes(text: str) -> int:
    """'64M' -> 67108864; a plain number is bytes."""
    text = text.strip().upper().removesuffix("B")
    scale = _UNITS.get(text[-1:], 1)
    try:
        return int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise UserError(f"${BUDGET_ENV}={text!r} is not a number of bytes (64M, 2G)") from None


def size(count: int) -> str:
    """Bytes as people read them: 47 MB, 6.1 GB (decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            value = count / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"
    return f"{count} B"


def _host_bytes() -> int:
    """The host's physical memory, or its cgroup (v2) limit if lower."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        with open("/sys/fs/cgroup/memory.max") as limit:
            text = limit.read().strip()
    except OSError:
        return total
    return min(total, int(text)) if text.isdigit() else total


def _gpu_bytes() -> int | None:
    """The smallest local GPU's memory: its logical devices' memory_limit if set, else
    what nvidia-smi reports; None if neither says."""
    physical = tf.config.list_physical_devices("GPU")
    limits = [
        sum(c.memory_limit for c in configs) * 2**20
        for configs in (tf.config.get_logical_device_configuration(g) for g in physical)
        if configs and all(c.memory_limit for c in configs)
    ]
    if limits:
        return min(limits)
    try:
        query = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
        out = subprocess.run(query, capture_output=True, text=True, timeout=20, check=True)
        return min(int(mib) for mib in out.stdout.split()) * 2**20
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _splits(datasets: data.Data) -> list[tuple[str, object]]:
    named = [("train", datasets.train)]
    named += [("validation", datasets.validation)] if datasets.validation is not None else []
    return [*named, ("test", datasets.test)]


def _has_source(datasets: data.Data) -> bool:
    return any(isinstance(split, source.Source) for _, split in _splits(datasets))


def _mapped(datasets: data.Data) -> str | None:
    """How errors name the first array mapped from a file (x_train, say), or None."""
    for name, split in _splits(datasets):
        for key, array in arrays.named_arrays(split, name):
            if arrays.is_mapped(array):
                return key
    return None


def _by_index(datasets: data.Data, where: str) -> data.Data:
    def each(split, name):
        return None if split is None else arrays.ArraySource.of(split, where, name)

    return data.Data(
        train=each(datasets.train, "train"),
        test=each(datasets.test, "test"),
        validation=each(datasets.validation, "validation"),
    )
