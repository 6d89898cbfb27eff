"""The layout's import rules (docs/design.md, "The packages"): one-way layers, TF-free parts,
and a table that names every module.

An AST scan of every module under tf_mgpu/, lazy imports inside functions
included, a fresh interpreter that imports the TF-free parts, and the table read
against the files.
"""

import ast
import pathlib
import re
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "tf_mgpu"

# The top-level commands (`python -m tf_mgpu.<name>`), and training.py, which assembles the
# run, with the modules of its phases.
COMMANDS = tuple(
    f"tf_mgpu.{name}"
    for name in (
        *("main", "evaluate", "predict", "launch", "slurm", "kubernetes", "devices"),
        *("sweep", "bench", "check", "api", "training"),
        *("building", "resuming", "start_lines", "finishing"),
    )
)

# Part -> the modules and packages nothing in that part may import. These are the rules
# enforced; the rest of the table in docs/design.md (e.g. `tools` importing only what it
# needs) is not checked here.
FORBIDDEN = {
    "tf_mgpu.engine": ("tf_mgpu.outputs", "tf_mgpu.tasks", "tf_mgpu.tools", *COMMANDS),
    "tf_mgpu.outputs": ("tf_mgpu.tasks", "tf_mgpu.tools", *COMMANDS),
    "tf_mgpu.cluster": ("tf_mgpu.engine", "tf_mgpu.outputs", "tf_mgpu.tasks", "tf_mgpu.tools"),
}

# The engine's floors (docs/design.md), bottom up: a package imports only the floors below it.
ENGINE_FLOORS = (
    ("distribute", "model", "faults"),
    ("input",),
    ("task",),
    ("state",),
    ("step",),
    ("control",),
)
for _floor, _packages in enumerate(ENGINE_FLOORS):
    _above = [f"tf_mgpu.engine.{p}" for floor in ENGINE_FLOORS[_floor:] for p in floor]
    for _package in _packages:
        FORBIDDEN[f"tf_mgpu.engine.{_package}"] = (
            *FORBIDDEN["tf_mgpu.engine"],
            *(p for p in _above if p != f"tf_mgpu.engine.{_package}"),
        )


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: pathlib.Path) -> set[str]:
    """Every module `path` imports, anywhere in it; `from a import b` counts as a and a.b."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def inside(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_the_scan_sees_every_part():
    parts = {module_name(path).split(".")[1] for path in MODULES if path.parent != PACKAGE}
    assert {"cluster", "engine", "outputs", "tools"} <= parts, parts
    engine = {p.name for p in (PACKAGE / "engine").iterdir() if (p / "__init__.py").exists()}
    floors = {p for floor in ENGINE_FLOORS for p in floor} - {"task"}
    assert engine == floors, f"every engine package has a floor: {engine ^ floors}"
    assert sorted(p.name for p in (PACKAGE / "engine").glob("*.py")) == ["__init__.py", "task.py"]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: module_name(path))
def test_imports_point_only_downwards(path):
    name = module_name(path)
    rules = [forbidden for part, forbidden in FORBIDDEN.items() if inside(name, part)]
    broken = sorted(
        f"{name} imports {target}"
        for target in imported(path)
        for forbidden in rules
        for prefix in forbidden
        if inside(target, prefix)
    )
    assert not broken, broken


def tf_free_modules() -> list[str]:
    subpackages = [
        module_name(p) for p in MODULES if p.name == "__init__.py" and p.parent != PACKAGE
    ]
    cluster = [
        module_name(p) for p in (PACKAGE / "cluster").glob("*.py") if p.name != "__init__.py"
    ]
    top = [
        "tf_mgpu",
        "tf_mgpu.config",
        "tf_mgpu.config_checks",
        "tf_mgpu.errors",
        "tf_mgpu.cli",
        "tf_mgpu.compile_cache",
    ]
    # The benchmark's own process only runs commands and reads what they leave.
    bench = ["runner", "variants", "figures", "tables", "startup"]
    return [*top, *subpackages, *cluster, *(f"tf_mgpu.tools.benchmarks.{m}" for m in bench)]


def test_the_tf_free_parts_import_without_tensorflow():
    modules = tf_free_modules()
    assert {"tf_mgpu.cluster.tf_config", "tf_mgpu.tools.benchmarks"} <= set(modules), modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'tensorflow' or m.startswith('tensorflow.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"TensorFlow loaded: {done.stdout[:500]}"


DESIGN = PACKAGE.parent / "docs" / "design.md"


def design_table() -> dict[pathlib.Path, list[str]]:
    """docs/design.md's package table: each row's package (a folder of tf_mgpu/, or a module
    such as `engine/task.py`) -> the names its modules column gives, `x` a module and `x/` a
    package inside it. Two rows of one package (tf_mgpu's commands and its vocabulary) add up."""
    text = DESIGN.read_text().split("## The packages", 1)[1].split("\n## ", 1)[0]
    rows: dict[pathlib.Path, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or not cells[0][:1].isdigit():
            continue  # the header, its rule, or prose
        (package,) = re.findall(r"`([^`]+)`", cells[1])
        where = PACKAGE if package == "tf_mgpu" else PACKAGE / package.rstrip("/")
        rows.setdefault(where, []).extend(re.findall(r"`([^`]+)`", cells[3]))
    return rows


def named_file(where: pathlib.Path, name: str) -> pathlib.Path:
    """The file a name in the table stands for: `x` is x.py in `where`, `x/` is x/__init__.py."""
    return where / name[:-1] / "__init__.py" if name.endswith("/") else where / f"{name}.py"


def test_the_design_table_names_every_module_and_only_modules_that_exist():
    rows = design_table()
    assert {PACKAGE, PACKAGE / "engine" / "task.py", PACKAGE / "tools" / "benchmarks"} <= set(rows)
    named = set()
    for where, names in rows.items():
        assert len(names) == len(set(names)), f"{where.name}: a module named twice: {names}"
        # `engine/task.py`'s row is the module itself.
        named |= {where} if where.suffix == ".py" else {named_file(where, n) for n in names}
    modules = {path for path in MODULES if path.name != "__init__.py"}
    missing = sorted(str(path.relative_to(PACKAGE)) for path in modules - named)
    assert not missing, f"modules docs/design.md's table does not name (add to its row): {missing}"
    stale = sorted(str(path.relative_to(PACKAGE)) for path in named if not path.is_file())
    assert not stale, f"docs/design.md's table names what tf_mgpu/ does not hold: {stale}"
