"""Prints `export` lines with this Slurm task's TF_CONFIG, for a shell to `eval`.

  srun bash -c 'eval "$(python -m tf_mgpu.slurm)" && exec python your_trainer.py'

The command only: TensorFlow's SlurmClusterResolver does the work, in
`tf_mgpu.cluster.slurm_env` (which also runs this command in a subprocess for
`python -m tf_mgpu.main --cluster_resolver=slurm`).
"""

import argparse
import os
import shlex
import sys

from tf_mgpu import errors
from tf_mgpu.cluster import slurm_env
from tf_mgpu.errors import UserError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf_mgpu.slurm",
        description="Print `export` lines with this Slurm task's TF_CONFIG, for `eval`.",
    )
    parser.add_argument("--slurm_port_base", type=int, default=8888)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's start-up lines
    try:
        variables = slurm_env.resolve(args.slurm_port_base)
    except UserError as e:
        print(errors.line(e), file=sys.stderr, flush=True)
        return e.exit_code
    for name, value in variables.items():
        print(f"export {name}={shlex.quote(value)}")
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
