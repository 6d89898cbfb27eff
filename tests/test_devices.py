"""`python -m tf_mgpu.devices`: what tf_mgpu sees here. On this CPU-only machine: no GPU, and
the CPU split as main splits it."""

import sys

from tests import support


def test_the_command_says_what_mirrored_would_run_on(tmp_path):
    command = [sys.executable, "-m", "tf_mgpu.devices", "--num_cpu_devices=2"]
    done = support.run_processes({"devices": (command, support.environment())}, tmp_path, 120)[
        "devices"
    ]
    assert done.returncode == 0, done.tail()
    lines = [s for s in done.stdout.splitlines() if s.startswith("tf_mgpu devices: ")]
    assert lines[0].startswith("tf_mgpu devices: tensorflow 2.21"), lines
    assert "no GPU visible" in lines[1], lines
    assert lines[2].startswith("tf_mgpu devices: --strategy=mirrored would run 2 replicas: "), lines
    assert lines[2].endswith(": /device:CPU:0, /device:CPU:1"), lines
