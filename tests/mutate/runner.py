"""Breaks each guarded behaviour in a copy of the repository and runs the test that guards it.

  python -m tests.mutate                 # every mutation in mutations.py
  python -m tests.mutate --only=resume   # those whose behaviour names "resume"
  python -m tests.mutate --list          # the table of mutations, nothing run

A mutation is (file, exact old text, new text, test node ids). One at a time,
the working tree is copied to a temporary directory (never changed itself),
the old text is replaced there, and the tests run there with pytest, one
process at a time (`-n 0`). The test must fail: the mutant is then
"killed". A test that passes lets the mutant "survive"; pytest failing to
run the tests at all (a collection or usage error: a renamed test, say) is an
"error". Either makes the exit code 1.

Before any run, every old text must occur exactly once in its file, else
nothing runs (exit 2): a mutation whose code moved is refused instead of
silently testing nothing. By default the tests first run once unmutated in a
clean copy (the baseline); if they fail there, a failure under a mutation
would prove nothing, and nothing else runs (exit 2).
"""

import argparse
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXIT_ALL_KILLED, EXIT_SURVIVED, EXIT_REFUSED = 0, 1, 2
PYTEST_FAILED = 1  # pytest's exit code when tests ran and some failed
# Not copied: version control, environments, caches.
_IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info"
)


@dataclasses.dataclass(frozen=True)
class Mutation:
    behaviour: str  # what README promises, in a few words
    what: str  # the breakage, in a few words
    path: str  # relative to the repository root
    old: str  # found exactly once in `path`
    new: str
    tests: tuple[str, ...]  # pytest node ids, relative to the repository root


@dataclasses.dataclass(frozen=True)
class Outcome:
    mutation: Mutation
    result: str  # "killed", "survived" or "error"
    seconds: float
    log: pathlib.Path


class RefusedError(Exception):
    """A mutation that cannot be applied as written: its old text is not there exactly once,
    or a test it names is missing."""


def check(root: pathlib.Path, mutation: Mutation) -> None:
    """Raises RefusedError unless `mutation` applies to the tree at `root` exactly once."""
    path = root / mutation.path
    if not path.is_file():
        raise RefusedError(f"{mutation.behaviour}: {mutation.path} does not exist")
    count = path.read_text().count(mutation.old)
    if count != 1:
        raise RefusedError(
            f"{mutation.behaviour}: the old text occurs {count} times in {mutation.path}, "
            f"not once: {mutation.old!r}"
        )
    if not mutation.tests:
        raise RefusedError(f"{mutation.behaviour}: no test named")
    for node in mutation.tests:
        file, _, name = node.partition("::")
        if not (root / file).is_file():
            raise RefusedError(f"{mutation.behaviour}: no test file for {node}")
        function = name.split("[")[0]
        if function and f"def {function}(" not in (root / file).read_text():
            raise RefusedError(f"{mutation.behaviour}: {file} defines no {function}")


def apply(root: pathlib.Path, mutation: Mutation) -> None:
    """Replaces the old text with the new one in the tree at `root` (a copy)."""
    check(root, mutation)
    path = root / mutation.path
    path.write_text(path.read_text().replace(mutation.old, mutation.new))


def copy_tree(root: pathlib.Path, destination: pathlib.Path) -> pathlib.Path:
    shutil.copytree(root, destination, ignore=_IGNORED, symlinks=True)
    return destination


def environment(root: pathlib.Path, copy: pathlib.Path) -> dict[str, str]:
    """The tests' environment in the copy: its own tf_mgpu first on the path, and the
    MNIST files where the original tree finds them (../shared beside it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    default_mnist = root.parent / "shared" / "datasets" / "mnist"
    env.setdefault("TF_MGPU_MNIST_DIR", str(default_mnist.resolve()))
    return env


def run_tests(
    root: pathlib.Path, copy: pathlib.Path, tests: Sequence[str], log: pathlib.Path, timeout: float
) -> tuple[int | None, float]:
    """pytest on `tests` in `copy`, output to `log`: (its exit code, or None on timeout;
    seconds)."""
    # `-m ""`: the named tests whatever their stage (pyproject's addopts leave some out).
    command = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-m", "", "-p", "no:cacheprovider"]
    command += list(tests)
    started = time.monotonic()
    with open(log, "w") as out:
        try:
            done = subprocess.run(
                command,
                cwd=copy,
                env=environment(root, copy),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = None
    return code, time.monotonic() - started


def verdict(code: int | None) -> str:
    """A failing test kills the mutant (a hang past the timeout too: CI would fail)."""
    if code == 0:
        return "survived"
    if code == PYTEST_FAILED or code is None:
        return "killed"
    return "error"


def run(
    root: pathlib.Path,
    mutations: Sequence[Mutation],
    work: pathlib.Path,
    *,
    baseline: bool = True,
    timeout: float = 900,
    say: Callable[[str], None] = print,
) -> list[Outcome] | None:
    """Every mutation in its own copy of `root`; None when the baseline fails."""
    if baseline:
        tests = list(dict.fromkeys(node for m in mutations for node in m.tests))
        copy = copy_tree(root, work / "baseline")
        code, seconds = run_tests(root, copy, tests, work / "baseline.log", timeout * 2)
        shutil.rmtree(copy, ignore_errors=True)
        say(f"baseline: {len(tests)} tests unmutated, pytest exit {code}, {seconds:.0f} s")
        if code != 0:
            say(f"the tests fail unmutated (see {work / 'baseline.log'}); nothing proven")
            return None
    outcomes = []
    for number, mutation in enumerate(mutations, start=1):
        copy = copy_tree(root, work / f"mutant{number}")
        apply(copy, mutation)
        log = work / f"mutant{number}.log"
        code, seconds = run_tests(root, copy, mutation.tests, log, timeout)
        shutil.rmtree(copy, ignore_errors=True)
        outcome = Outcome(mutation, verdict(code), seconds, log)
        say(f"{number}/{len(mutations)} {mutation.behaviour}: {outcome.result} ({seconds:.0f} s)")
        outcomes.append(outcome)
    return outcomes


def table(outcomes: Sequence[Outcome]) -> str:
    """A Markdown table: behaviour, mutation, test, result."""
    lines = [
        "| behaviour | mutation | test | result |",
        "| --- | --- | --- | --- |",
    ]
    for o in outcomes:
        m = o.mutation
        tests = "<br>".join(f"`{t}`" for t in m.tests)
        lines.append(
            f"| {m.behaviour} | {m.what} (`{m.path}`) | {tests} | {o.result} ({o.seconds:.0f} s) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str], mutations: Sequence[Mutation] | None = None, root=ROOT) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutate")
    parser.add_argument("--only", help="only the mutations whose behaviour contains this")
    parser.add_argument("--list", action="store_true", help="print the mutations, run nothing")
    parser.add_argument("--no_baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per pytest run")
    parser.add_argument("--work_dir", help="where the copies and logs go (default: a new temp)")
    args = parser.parse_args(argv)
    if mutations is None:
        from tests.mutate.mutations import MUTATIONS

        mutations = MUTATIONS
    chosen = [m for m in mutations if not args.only or args.only in m.behaviour]
    if not chosen:
        print(f"no mutation's behaviour contains {args.only!r}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        for mutation in chosen:
            check(root, mutation)
    except RefusedError as e:
        print(f"tf_mgpu mutate: refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    if args.list:
        for m in chosen:
            print(f"{m.behaviour}: {m.what} ({m.path}) -> {' '.join(m.tests)}")
        return EXIT_ALL_KILLED
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="tf_mgpu-mutate-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes = run(root, chosen, work, baseline=not args.no_baseline, timeout=args.timeout)
    if outcomes is None:
        return EXIT_REFUSED
    print(table(outcomes))
    killed = sum(o.result == "killed" for o in outcomes)
    print(
        f"{killed} of {len(outcomes)} mutants killed in {time.monotonic() - started:.0f} s; "
        f"logs in {work}"
    )
    return EXIT_ALL_KILLED if killed == len(outcomes) else EXIT_SURVIVED
