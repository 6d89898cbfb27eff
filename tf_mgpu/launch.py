"""Runs tf_mgpu.main as N worker processes on this machine, like `torchrun --nproc-per-node=N`.

  python -m tf_mgpu.launch --workers=2 -- --strategy=multi_worker_mirrored --manual_dir=DIR
  python -m tf_mgpu.launch --workers=3 --max_restarts=2 -- --flagfile=flags/multi_worker.cfg
  python -m tf_mgpu.launch --workers=2:3 --max_restarts=2 -- --flagfile=flags/multi_worker.cfg

Everything after `--` goes to every worker's `python -m tf_mgpu.main`
unchanged; each worker gets its own TF_CONFIG on free loopback ports, and
every line it prints starts with its name, `[worker:1] `. Ctrl-C or SIGTERM
makes every worker save a checkpoint and exit 75 (a second one kills them).
When a worker fails, the others are stopped; --max_restarts starts them all
again, and training resumes from the checkpoint in main's --model_dir; with
--workers=MIN:MAX each restart leaves out the worker that failed first, down
to MIN workers, at the same global batch (main's --batch_workers=MAX).
The workers run in a private network namespace that holds only loopback: their
ports are reachable by each other only. Where the kernel refuses one, no worker
starts (exit 3), unless --noprivate_network accepts open ports.
Exits with the first failing worker's exit code: see tf_mgpu/errors.py and docs/failures.md.
"""

# The only module that reads the launcher's flags; tf_mgpu.cluster.launcher takes plain arguments.

import math
import sys

from absl import app, flags

from tf_mgpu import cli
from tf_mgpu.cluster import elastic, launcher


class _WorkersParser(flags.ArgumentParser):
    """N, or MIN:MAX, as (MIN, MAX)."""

    syntactic_help = "N or MIN:MAX"

    def parse(self, argument) -> tuple[int, int]:
        if isinstance(argument, tuple):
            return argument
        return elastic.parse_workers(argument)

    def flag_type(self) -> str:
        return "N or MIN:MAX"


_WORKERS = flags.DEFINE(
    _WorkersParser(),
    "workers",
    None,
    "Worker processes to start on this machine, each a task of TF_CONFIG (on CPUs, one "
    "replica each): N, or MIN:MAX to go on with fewer when a worker is lost. With MIN:MAX "
    "the group starts with MAX; each restart (--max_restarts) leaves out the worker that "
    "failed first, taken as lost for good, while at least MIN remain (at MIN it restarts "
    "MIN), and every worker gets main's --batch_workers=MAX, so the global batch stays the "
    "same. Required.",
)
_MAX_RESTARTS = flags.DEFINE_integer(
    "max_restarts",
    0,
    "After a worker fails, start the whole group again this many times at most, on new "
    "ports, resuming from the last checkpoint. Not after exit 2, 3 or 4, which would only "
    "recur, nor after a stop (75).",
    lower_bound=0,
)
_GRACE_SECONDS = flags.DEFINE_float(
    "grace_seconds",
    10.0,
    "After a worker fails, the others get this long to exit on their own (a lost peer ends "
    "training within about 10 s, usually at once), then SIGTERM (which also ends a wait for "
    "peers), then after as long again SIGKILL.",
    lower_bound=0.0,
)
_PRIVATE_NETWORK = flags.DEFINE_boolean(
    "private_network",
    True,
    "Run the workers in a network namespace of their own that holds only loopback, where "
    "the kernel allows, so that their ports (TensorFlow's gRPC servers: every interface, no "
    "authentication) are reachable by each other only; where the kernel refuses, no worker "
    "starts. --noprivate_network gives them this machine's network, for a worker that needs "
    "it: a download (MNIST's first), remote storage, a profiler attached from outside.",
)
flags.register_validator(
    "grace_seconds", math.isfinite, message="--grace_seconds must be a finite number"
)


def parse_flags(argv: list[str]) -> list[str]:
    """Parses the flags before `--`; returns the program name and main's flags, after `--`.

    A bad flag is one line and exit code 2, as in tf_mgpu.main.
    """
    own, main_args = launcher.split_argv(argv)
    try:
        unparsed = flags.FLAGS(own)
    except flags.UnrecognizedFlagError as e:
        cli.usage_error(f"{e}; tf_mgpu.main's flags go after --")
    except flags.Error as e:
        cli.usage_error(cli.flag_error(e))
    if _WORKERS.value is None:
        cli.usage_error("--workers=N is required")
    if len(unparsed) > 1:
        cli.usage_error(
            f"unexpected arguments: {' '.join(unparsed[1:])}; tf_mgpu.main's flags go after --"
        )
    return [argv[0], *main_args]


def main(argv: list[str]) -> None:
    minimum, maximum = _WORKERS.value
    sys.exit(
        launcher.Launcher(
            argv[1:],
            workers=maximum,
            min_workers=minimum,
            max_restarts=_MAX_RESTARTS.value,
            grace=_GRACE_SECONDS.value,
            private_network=_PRIVATE_NETWORK.value,
        ).run()
    )


if __name__ == "__main__":
    app.run(main, flags_parser=parse_flags)
