"""The Dockerfile that docs/gpus.md and the Kubernetes examples name: on TensorFlow's GPU image
of the tested version, and built where a Docker daemon runs (none here: skipped, saying so)."""

import re
import shutil
import subprocess

import pytest

from tests.support import ROOT
from tf_mgpu import internals

DOCKERFILE = ROOT / "Dockerfile"
TAG = f"tf-mgpu:{internals.TESTED['tensorflow']}-gpu"


def test_it_builds_on_the_tested_tensorflow_and_the_examples_name_its_image():
    text = DOCKERFILE.read_text()
    base = re.search(r"^FROM (\S+)$", text, re.M).group(1)
    assert base == f"tensorflow/tensorflow:{internals.TESTED['tensorflow']}.0-gpu", base
    assert f"docker build -t {TAG} ." in text
    for manifest in (ROOT / "examples" / "kubernetes").glob("*.yaml"):
        images = re.findall(r"image: (\S+)", manifest.read_text())
        assert images == [TAG], (manifest.name, images)


def docker_daemon() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


@pytest.mark.skipif(not docker_daemon(), reason="no Docker daemon here to build the image")
def test_the_image_builds():
    done = subprocess.run(
        ["docker", "build", "-t", TAG, str(ROOT)], capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
