"""Every package the code imports is declared, bounded, and pinned where CI installs it:
a clean clone of an unchanged main installs the versions CI tested (constraints.txt)."""

import ast
import importlib.metadata
import re
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support import ROOT

tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with Python 3.11's")

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(r) for r in PROJECT["dependencies"]]
EXTRAS = {k: [Requirement(r) for r in v] for k, v in PROJECT["optional-dependencies"].items()}
INSTALLED = ("test", "bench", "hub")  # README's install, and CI's


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    found = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in found}


def imported(folder: str, but: str = "") -> set[str]:
    """The top-level modules imported anywhere under `folder` (but in `but`), but the
    standard library's and the repository's own."""
    names = set()
    for path in (ROOT / folder).rglob("*.py"):
        if but and path.is_relative_to(ROOT / but):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"tf_mgpu", "tests"}


def declared(requirements) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements}


def providers(module: str) -> set[str]:
    return {canonicalize_name(d) for d in importlib.metadata.packages_distributions()[module]}


@pytest.mark.parametrize(
    ("folder", "allowed"),
    [
        ("tf_mgpu", RUNTIME),
        # The benchmark's reference loop runs the seed's PyTorch code ([bench]).
        ("tf_mgpu/tools/benchmarks", RUNTIME + EXTRAS["bench"]),
        ("tests", RUNTIME + [r for extra in INSTALLED for r in EXTRAS[extra]]),
        ("examples", RUNTIME + EXTRAS["hub"]),
    ],
)
def test_every_imported_package_is_declared(folder, allowed):
    but = "tf_mgpu/tools/benchmarks" if folder == "tf_mgpu" else ""
    found = imported(folder, but)
    missing = {m: providers(m) for m in found if not providers(m) & declared(allowed)}
    assert not missing, f"imported under {folder}/ and declared nowhere: {missing}"


def test_every_declared_package_has_an_upper_bound():
    for requirement in RUNTIME + [r for extra in EXTRAS.values() for r in extra]:
        bounded = [s for s in requirement.specifier if s.operator in ("<", "<=", "==", "~=")]
        assert bounded, f"{requirement} has no upper bound"


def test_constraints_pin_every_declared_package_within_its_bounds():
    pinned = pins()
    for requirement in RUNTIME + [r for extra in INSTALLED for r in EXTRAS[extra]]:
        version = pinned.get(canonicalize_name(requirement.name))
        assert version, f"constraints.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(Version(version), prereleases=True), (
            f"constraints.txt pins {requirement.name}=={version}, outside {requirement}"
        )


def test_ci_and_readme_install_with_the_constraints_and_this_environment_is_theirs():
    command = "pip install -e '.[test,bench,hub]' -c constraints.txt"
    assert command in (ROOT / "README.md").read_text()
    assert re.search(rf"^{re.escape(command)}$", (ROOT / ".ci" / "run").read_text(), re.M)
    for name, version in pins().items():
        installed = importlib.metadata.version(name)
        assert Version(installed).public == Version(version).public, (
            f"{name} {installed} is installed; constraints.txt pins {version}"
        )
