"""README.md and docs/*.md stay true: links resolve, flags exist, commands parse.

Every `python -m tf_mgpu...` command in a fenced block is parsed by its own
command's flag parser (absl's FLAGS, or the command's argparse parser) in one
small subprocess per command module, none of which loads TensorFlow, so the
whole file takes a few seconds.
"""

import ast
import json
import re
import shlex
import subprocess
import sys

import pytest

from tests.support import ROOT, environment

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Flags of other programs the pages name (srun, sbatch, pip, tensorboard, torchrun, iptables,
# docker...).
OTHER_PROGRAMS_FLAGS = {
    *("inspect", "logdir", "label", "nodes", "time", "output", "wait", "dport", "gpus", "rm")
}
# Every command a page may name a flag of, whether or not a fenced block runs it.
COMMANDS = (
    "tf_mgpu.main",
    "tf_mgpu.launch",
    "tf_mgpu.check",
    "tf_mgpu.evaluate",
    "tf_mgpu.predict",
    "tf_mgpu.devices",
    "tf_mgpu.bench",
    "tf_mgpu.sweep",
    "tf_mgpu.slurm",
    "tf_mgpu.kubernetes",
    "tests.mutate",
    "tf_mgpu.tools.benchmarks.markdown",
    "tf_mgpu.tools.benchmarks.ab",
    "tf_mgpu.tools.synthetic",
    "tf_mgpu.tools.reference",
)
ABSL_FLAGS = {"flagfile", "help", "helpfull", "helpshort", "undefok"}

# In one fresh interpreter per command module: define its flags, parse each command line.
_DRIVER = r"""
import argparse, contextlib, importlib, io, json, sys
module, argvs = sys.argv[1], json.loads(sys.stdin.read())
mod = importlib.import_module(module)
result = {"flags": [], "errors": []}
if module in ("tf_mgpu.slurm", "tf_mgpu.kubernetes", "tf_mgpu.tools.benchmarks.markdown",
              "tests.mutate", "tf_mgpu.tools.synthetic", "tf_mgpu.tools.reference"):
    # argparse: the parser is built inside main(); read its flags from --help, and parse
    # each command with the parser main() builds (it exits 2 on a bad flag).
    main = importlib.import_module("tests.mutate.runner").main if module.endswith(
        "mutate") else mod.main
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured), contextlib.suppress(SystemExit):
        main(["--help"])
    result["flags"] = sorted(set(
        word.lstrip("-") for word in captured.getvalue().split() if word.startswith("--")))
    original = argparse.ArgumentParser.parse_args
    def parse_only(self, args=None, namespace=None):
        original(self, args, namespace)
        raise SystemExit(0)
    argparse.ArgumentParser.parse_args = parse_only
    for argv in argvs:
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            try:
                main(argv)
            except SystemExit as e:
                if e.code not in (0, None):
                    result["errors"].append([argv, errors.getvalue().strip()])
else:
    from absl import flags
    result["flags"] = sorted(flags.FLAGS)
    for argv in argvs:
        flags.FLAGS.unparse_flags()
        try:
            flags.FLAGS([module, *argv])
        except flags.Error as e:
            result["errors"].append([argv, str(e)])
print(json.dumps(result))
"""


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def commands(page) -> list[tuple[str, list[str]]]:
    """(module, flags) of every `python -m tf_mgpu...` in the page's fenced blocks."""
    found = []
    for block in fenced_blocks(page.read_text()):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" # ")[0]
            for part in re.split(r";|\s(?:&&|\||2>&1|>)\s", line):
                match = re.search(r"python -m (tf_mgpu[\w.]*)(.*)", part)
                if match is None or "$(" in part:
                    continue
                try:
                    words = shlex.split(match.group(2))
                except ValueError:  # a quote closed on a later line: `python -c "..."`
                    words = match.group(2).split()
                words = [w.strip("[]") for w in words]
                found.extend(_split_launch(match.group(1), [w for w in words if w != "..."]))
    return found


def _split_launch(module: str, words: list[str]) -> list[tuple[str, list[str]]]:
    """The launcher's own flags, and main's after `--`."""
    if module == "tf_mgpu.launch" and "--" in words:
        cut = words.index("--")
        return [(module, words[:cut]), ("tf_mgpu.main", words[cut + 1 :])]
    return [(module, words)]


def parse(module: str, argvs: list[list[str]]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, module],
        input=json.dumps(argvs),
        cwd=ROOT,  # flagfiles are relative to the repository root, as the pages run them
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{module}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.splitlines()[-1])


def _usable(argv: list[str]) -> list[str]:
    """A run's own flagfile (`--flagfile=/tmp/demo/flags.txt`) exists only after that run."""
    return [w for w in argv if not (w.startswith("--flagfile=/tmp/"))]


@pytest.fixture(scope="module")
def parsed() -> dict[str, dict]:
    by_module: dict[str, list[list[str]]] = {}
    for page in PAGES:
        for module, argv in commands(page):
            by_module.setdefault(module, []).append(_usable(argv))
    for module in COMMANDS:
        by_module.setdefault(module, [])
    return {module: parse(module, argvs) for module, argvs in by_module.items()}


def test_the_pages_exist_and_the_readme_is_short():
    names = {page.name for page in PAGES}
    for guide in ("tasks.md", "multi-worker.md", "failures.md", "speed.md", "check.md"):
        assert guide in names, names
    length = len((ROOT / "README.md").read_text().splitlines())
    assert length <= 200, f"README.md has {length} lines; keep it to 200, move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page):
    text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(), flags=re.DOTALL)  # code
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.name}: broken links {broken}"


def _anchors(page) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_flag_named_exists_in_a_tf_mgpu_command(parsed):
    known = OTHER_PROGRAMS_FLAGS | ABSL_FLAGS
    for result in parsed.values():
        for name in result["flags"]:
            known |= {name, f"no{name}"}
    unknown = {}
    for page in PAGES:
        if page.name == "benchmarks.md":
            continue  # the benchmark's own output, which probes a misspelled flag on purpose
        # absl flags are snake_case; hyphenated ones (--kill-on-bad-exit) are other programs'.
        for name in re.findall(r"(?<![\w-])--([a-z][a-z0-9_]*)\b(?!-)", page.read_text()):
            if name not in known:
                unknown.setdefault(page.name, set()).add(name)
    assert not unknown, f"flags that no tf_mgpu command defines: {unknown}"


def test_every_command_in_a_fenced_block_parses(parsed):
    failures = {module: r["errors"] for module, r in parsed.items() if r["errors"]}
    assert not failures, f"commands whose flags do not parse: {failures}"
    assert len(parsed) >= 5, sorted(parsed)  # the pages do show the commands


def test_a_bad_flag_in_a_page_would_be_caught():
    result = parse("tf_mgpu.main", [["--epochs=2"], ["--epoch=2"], ["--batch_size=0"]])
    assert [argv for argv, _ in result["errors"]] == [["--epoch=2"], ["--batch_size=0"]], result
    result = parse("tf_mgpu.kubernetes", [[], ["--port=1"]])
    assert [argv for argv, _ in result["errors"]] == [["--port=1"]], result


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_fenced_python_block_parses(page):
    """A ```python block is Python a reader can paste: it parses (running the fragments would
    need TensorFlow, a model dir or a cluster each; a whole task file is an example the tests
    train, below; the commands they name are checked above)."""
    for block in python_blocks(page.read_text()):
        try:
            ast.parse(block)
        except SyntaxError as e:
            pytest.fail(
                f"{page.name}: a python block does not parse ({e.msg}, line {e.lineno}):\n{block}"
            )


def _code(source: str) -> str:
    """A module's code without its docstring and blank lines."""
    tree = ast.parse(source)
    if (
        tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(tree.body[0].value, ast.Constant)
    ):
        source = "\n".join(source.splitlines()[tree.body[0].end_lineno :])
    return "\n".join(line for line in source.splitlines() if line.strip())


def test_a_whole_task_file_in_the_docs_is_an_example_the_tests_run():
    """A ```python block that is a whole task (build_model and load_data) is the code of a
    file in examples/, which the tests train (tests/tasks/test_user_task.py): what a reader
    copies runs."""
    examples = {path.name: _code(path.read_text()) for path in (ROOT / "examples").glob("*.py")}
    whole = [
        (page.name, block)
        for page in PAGES
        for block in python_blocks(page.read_text())
        if "def build_model" in block and "def load_data" in block and "import" in block
    ]
    assert whole, "docs/tasks.md shows a whole task file"
    for name, block in whole:
        assert _code(block) in examples.values(), f"{name}: this task is not any examples/ file"
