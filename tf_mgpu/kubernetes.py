"""Prints an `export` line with this Indexed Job pod's TF_CONFIG, for a shell to `eval`.

  eval "$(python -m tf_mgpu.kubernetes)" && exec python your_trainer.py

The command only: `tf_mgpu.cluster.kubernetes_env` derives TF_CONFIG from
JOB_COMPLETION_INDEX and the TF_MGPU_* variables the manifest sets
(`python -m tf_mgpu.main --cluster_resolver=kubernetes` does the same).
"""

import argparse
import shlex
import sys

from tf_mgpu import errors
from tf_mgpu.cluster import kubernetes_env
from tf_mgpu.errors import UserError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf_mgpu.kubernetes",
        description="Print an `export` line with this Indexed Job pod's TF_CONFIG, for `eval`.",
    )
    parser.parse_args(argv)
    try:
        value = kubernetes_env.tf_config()
    except UserError as e:
        print(errors.line(e), file=sys.stderr, flush=True)
        return e.exit_code
    print(f"export TF_CONFIG={shlex.quote(value)}")
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
