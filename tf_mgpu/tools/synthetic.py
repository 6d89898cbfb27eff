"""Writes a synthetic labelled image dataset in two formats, for `bench --input`.

  python -m tf_mgpu.tools.synthetic --out=/tmp/synth5g --gigabytes=5

Each image is uint8 (size x size x 3) with a label in 0..classes-1: the label's
own blocky pattern (a seeded low-resolution template, upsampled) plus uniform
noise, half and half, so a small convnet learns it. The same examples are
written twice in every folder:
  images.npy, labels.npy                 NumPy .npy files, read with mmap_mode="r"
  train-SSSSS-of-NNNNN.tfrecord          TFRecord shards of tf.train.Example
  test-SSSSS-of-NNNNN.tfrecord           ({"image": raw bytes, "label": int64})
  meta.json                              shapes, counts, shard names
The first `train` rows are the training split, the rest the test split (the
TFRecord train shards hold the training rows in order, contiguous per shard).

`--out` gets two such folders: full/ (--gigabytes of training images) and
subset/ (1% of them, at least --min_subset rows), so a benchmark compares one
dataset with a subset of it. Nothing is read back; writing is vectorised per
shard. Everything follows from --seed.
"""

import itertools
import os
import pathlib
import sys
import time

import numpy as np

from tf_mgpu import strict_json

META = "meta.json"
SHARD_BYTES = 64 << 20  # about this much image data per TFRecord shard


def templates(classes: int, size: int, seed: int) -> np.ndarray:
    """One uint8 pattern per class: random 8x8x3 blocks upsampled to size x size."""
    rng = np.random.default_rng([seed, 1])
    low = rng.integers(0, 256, size=(classes, 8, 8, 3), dtype=np.uint8)
    rows = np.arange(size) * 8 // size
    return low[:, rows][:, :, rows]


def examples(rows: int, patterns: np.ndarray, rng: np.random.Generator) -> tuple:
    """`rows` images (pattern / 2 + noise / 2) and their labels."""
    labels = rng.integers(0, len(patterns), size=rows).astype(np.int64)
    noise = rng.integers(0, 256, size=(rows, *patterns.shape[1:]), dtype=np.uint8)
    images = (patterns[labels] >> 1) + (noise >> 1)
    return images, labels


def _shards(rows: int, example_bytes: int, least: int) -> int:
    """An even number of shards (at least `least`), of about SHARD_BYTES each."""
    count = max(least, -(-rows * example_bytes // SHARD_BYTES))
    return min(rows, count + count % 2)


def write(
    folder: pathlib.Path,
    train: int,
    test: int,
    size: int = 96,
    classes: int = 10,
    seed: int = 0,
    echo=print,
) -> dict:
    """Writes `train` + `test` examples into `folder` in both formats; returns the meta."""
    import tensorflow as tf  # only the writer needs it, not the module's import

    folder.mkdir(parents=True, exist_ok=True)
    shape = (size, size, 3)
    example_bytes = int(np.prod(shape))
    patterns = templates(classes, size, seed)
    rng = np.random.default_rng([seed, 2, train, test])
    total = train + test
    images = np.lib.format.open_memmap(folder / "images.npy", "w+", np.uint8, (total, *shape))
    labels = np.lib.format.open_memmap(folder / "labels.npy", "w+", np.int64, (total,))
    splits = {
        "train": (0, train, _shards(train, example_bytes, 4)),
        "test": (train, total, _shards(test, example_bytes, 2)),
    }
    names: dict[str, list[str]] = {}
    started = time.monotonic()
    for split, (first, stop, count) in splits.items():
        names[split] = []
        bounds = np.linspace(first, stop, count + 1).astype(int)
        for shard, (a, b) in enumerate(itertools.pairwise(bounds)):
            x, y = examples(b - a, patterns, rng)
            images[a:b], labels[a:b] = x, y
            name = f"{split}-{shard:05d}-of-{count:05d}.tfrecord"
            with tf.io.TFRecordWriter(str(folder / name)) as records:
                for image, label in zip(x, y, strict=True):
                    records.write(_serialized(tf, image.tobytes(), int(label)))
            names[split].append(name)
        echo(f"  {folder.name}/{split}: {stop - first:,} examples, {count} shards")
    images.flush()
    labels.flush()
    del images, labels
    meta = {
        "shape": list(shape),
        "classes": classes,
        "train": train,
        "test": test,
        "seed": seed,
        "example_bytes": example_bytes,
        "shards": names,
        "seconds": round(time.monotonic() - started, 1),
    }
    (folder / META).write_text(strict_json.dumps(meta, indent=1) + "\n")
    return meta


def _serialized(tf, image: bytes, label: int) -> bytes:
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def sizes(gigabytes: float, size: int, min_subset: int) -> dict[str, tuple[int, int]]:
    """(train, test) rows of full/ and subset/: training images of `gigabytes` GiB, a test
    split of 1% (at least 256), the subset 1% of both (at least `min_subset` training rows)."""
    train = max(1, round(gigabytes * 2**30 / (size * size * 3)))
    subset = max(min_subset, train // 100)
    return {
        "full": (train, max(256, train // 100)),
        "subset": (subset, max(256, subset // 100)),
    }


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tf_mgpu.tools.synthetic", description=__doc__)
    parser.add_argument("--out", required=True, help="Folder to write full/ and subset/ into.")
    parser.add_argument(
        "--gigabytes", type=float, default=5.0, help="GiB of training images in full/."
    )
    parser.add_argument("--image_size", type=int, default=96, help="Images are this square, x3.")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--min_subset", type=int, default=1024, help="Training rows of subset/ at least."
    )
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    started = time.monotonic()
    for name, (train, test) in sizes(args.gigabytes, args.image_size, args.min_subset).items():
        write(
            out / name, train, test, args.image_size, args.classes, args.seed + (name == "subset")
        )
    used = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(
        f"wrote {out}: {used / 2**30:.2f} GiB in {time.monotonic() - started:.0f} s "
        f"(full/ and subset/, each as .npy and TFRecord shards)"
    )


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
