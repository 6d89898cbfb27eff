"""`python -m tests.mutate [--only=WORD] [--list] [--no_baseline]`; see runner.py."""

import sys

from tests.mutate import runner

if __name__ == "__main__":
    sys.exit(runner.main(sys.argv[1:]))
