"""The mutation check's own logic, on a tiny repository of its own (no TensorFlow, seconds)."""

import textwrap

import pytest

from tests.mutate import mutations, runner
from tests.mutate.runner import Mutation

CALC = "def double(x):\n    return 2 * x\n"
TESTS = """
from calc import double

def test_weak():
    assert double(2) > 0

def test_strong():
    assert double(3) == 6
"""


def tiny_repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(textwrap.dedent(TESTS))
    return root


def broken(test: str, old: str = "2 * x") -> Mutation:
    return Mutation(
        behaviour=f"doubles ({test})",
        what="triples",
        path="calc.py",
        old=old,
        new="3 * x",
        tests=(f"test_calc.py::{test}",),
    )


@pytest.mark.parametrize(
    ("mutation", "said"),
    [
        (broken("test_strong", old="4 * x"), "occurs 0 times in calc.py"),
        (broken("test_strong", old="x"), "occurs 2 times in calc.py"),
        (broken("test_missing"), "test_calc.py defines no test_missing"),
        (Mutation("b", "w", "nowhere.py", "x", "y", ("test_calc.py",)), "nowhere.py does not"),
    ],
    ids=["missing", "twice", "no_test", "no_file"],
)
def test_a_mutation_that_does_not_apply_exactly_once_is_refused_before_any_run(
    tmp_path, capsys, mutation, said
):
    root = tiny_repo(tmp_path)
    good = broken("test_strong")
    args = ["--work_dir", str(tmp_path / "work")]
    assert runner.main(args, [good, mutation], root=root) == runner.EXIT_REFUSED
    assert said in capsys.readouterr().err
    assert not (tmp_path / "work").exists(), "something ran"
    assert (root / "calc.py").read_text() == CALC


def test_a_surviving_mutant_makes_it_exit_non_zero_and_the_tree_stays_as_it_was(tmp_path, capsys):
    root = tiny_repo(tmp_path)
    chosen = [broken("test_strong"), broken("test_weak")]
    assert runner.main(["--work_dir", str(tmp_path / "work")], chosen, root=root) == (
        runner.EXIT_SURVIVED
    )
    out = capsys.readouterr().out
    assert "baseline: 2 tests unmutated, pytest exit 0" in out, out
    rows = [line for line in out.splitlines() if line.startswith("| doubles")]
    assert "| killed (" in rows[0], rows
    assert "| survived (" in rows[1], rows
    assert "1 of 2 mutants killed" in out, out
    assert (root / "calc.py").read_text() == CALC, "the tree itself was changed"


def test_every_mutant_killed_exits_0(tmp_path, capsys):
    root = tiny_repo(tmp_path)
    args = ["--work_dir", str(tmp_path / "work"), "--no_baseline"]
    assert runner.main(args, [broken("test_strong")], root=root) == runner.EXIT_ALL_KILLED
    assert "1 of 1 mutants killed" in capsys.readouterr().out


def test_tests_failing_unmutated_stop_everything(tmp_path, capsys):
    root = tiny_repo(tmp_path)
    (root / "calc.py").write_text(CALC.replace("2 * x", "5 * x"))
    mutation = Mutation("doubles", "w", "calc.py", "5 * x", "3 * x", ("test_calc.py",))
    assert runner.main(["--work_dir", str(tmp_path / "work")], [mutation], root=root) == (
        runner.EXIT_REFUSED
    )
    assert "the tests fail unmutated" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("code", "result"),
    [(0, "survived"), (1, "killed"), (None, "killed"), (2, "error"), (4, "error"), (5, "error")],
)
def test_only_failing_tests_kill(code, result):
    # 2 interrupted (a collection error), 4 usage error, 5 no tests: nothing was tested.
    assert runner.verdict(code) == result


def test_the_repositorys_mutations_all_apply_once_to_named_tests():
    assert len(mutations.MUTATIONS) >= 10
    for mutation in mutations.MUTATIONS:
        runner.check(runner.ROOT, mutation)
    assert len({m.behaviour for m in mutations.MUTATIONS}) == len(mutations.MUTATIONS)
