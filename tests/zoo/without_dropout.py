"""The adapted keras.io example that $ZOO_EXAMPLE names (`<section>/<stem>.py` under
tests/zoo/) with its dropout off, as `tests.zoo.one` runs it: a task file that worker processes
load with --task. Each replica draws its own dropout masks by design, so only without them can
2 workers be compared with one device. The example is otherwise as written."""

import os
import pathlib

from tests.zoo import feeding

_example = feeding.import_file(pathlib.Path(__file__).parent / os.environ["ZOO_EXAMPLE"])
_task, _ = feeding.without_randomness(_example)
globals().update({k: v for k, v in vars(_task).items() if not k.startswith("__")})
