"""The input alone: one worker's training pipeline, iterated without training.

  SYNTHETIC_DIR=/tmp/synth/full python -m tf_mgpu.tools.benchmarks.input_probe \
      --task=examples/synthetic_memmap_task.py --batch=64 --seconds=20

Loads the task's data as `tf_mgpu.main` does (for a tf.data split that includes
its scan), builds the pipeline a single worker trains from
(a source read by index: `tf_mgpu.engine.input.stream.train_dataset`; a stream:
`stream_shard.worker_steps`; with a one-pipeline, one-replica
`tf.distribute.InputContext`), takes a few
batches to warm it up, then takes batches for --seconds (or to the end of two
epochs) and prints one JSON line: load_seconds, examples, seconds, examples_per_second.
`bench --input` runs it (`tf_mgpu.tools.benchmarks.input_measure`).
"""

import argparse
import sys
import time

from tf_mgpu import strict_json

WARM_UP = 5  # batches taken before the clock starts


def measure(task: str, batch: int, seconds: float, seed: int = 0) -> dict:
    import tensorflow as tf

    from tf_mgpu.config import Config
    from tf_mgpu.engine.input import stream, stream_shard
    from tf_mgpu.tasks import adapter

    began = time.perf_counter()
    work = adapter.load(task)
    datasets = work.load_data(Config(task=task, batch_size=batch, seed=seed))
    loaded = time.perf_counter() - began
    context = tf.distribute.InputContext(1, 0, 1)
    if isinstance(datasets.train, stream.Stream):  # one element per step: (one replica's,)
        epochs = [
            stream_shard.worker_steps(
                datasets.train, batch, seed, e, context, "example", work.preprocess
            )
            for e in range(2)
        ]
        dataset = epochs[0].concatenate(epochs[1]).map(lambda part: part)
    else:
        dataset = stream.train_dataset(
            datasets.train, batch, seed, 2, context, preprocess=work.preprocess
        )
    batches = iter(dataset)
    for _ in range(WARM_UP):
        next(batches)
    examples, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        try:
            x, *_ = next(batches)
        except StopIteration:
            break
        examples += int(tf.nest.flatten(x)[0].shape[0])
    elapsed = time.perf_counter() - started
    return {
        "load_seconds": loaded,
        "examples": examples,
        "seconds": elapsed,
        "examples_per_second": examples / elapsed,
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tf_mgpu.tools.benchmarks.input_probe")
    parser.add_argument("--task", required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    print(strict_json.dumps(measure(args.task, args.batch, args.seconds)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
