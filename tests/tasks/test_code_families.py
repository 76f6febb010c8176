"""coevo.tasks.code_families: seeded, well formed, loadable as code problems, every reference
passing its own tests in the sandbox and a constant answer failing them."""

import ast
import json
import tempfile
from pathlib import Path

from coevo.tasks.code import count_test_cases, entry_parameters, example_calls, load_code_problems
from coevo.tasks.code_families import FAMILIES, generate, main
from coevo.validators.code import ReferenceTests
from coevo.validators.sandbox import Sandbox


def test_the_same_seed_gives_the_same_rows_and_another_seed_other_ones():
    assert generate(3, 2) == generate(3, 2)
    assert {r["prompt"] for r in generate(3, 2)} != {r["prompt"] for r in generate(4, 2)}
    assert len(generate(0, 2)) == 2 * len(FAMILIES)


def test_rows_load_as_code_problems_with_examples_and_unique_names(tmp_path):
    out = tmp_path / "problems.jsonl"
    assert main(["--seed", "1", "--per-family", "3", "--out", str(out)]) == 0
    problems = load_code_problems(out)
    assert len(problems) == 3 * len(FAMILIES)
    assert len({p.id for p in problems}) == len(problems)
    for p in problems:
        assert p.reference.startswith(p.prompt)
        defined = [n.name for n in ast.parse(p.reference).body if isinstance(n, ast.FunctionDef)]
        assert defined == [p.meta["entry_point"]]
        assert entry_parameters(p) and example_calls(p) and count_test_cases(p) == 6
    assert {json.loads(line)["family"] for line in out.read_text().splitlines()} == {f.name for f in FAMILIES}


def test_every_reference_passes_and_no_constant_answer_does():
    problems = load_code_problems_from_rows(generate(0, 2))
    runner = ReferenceTests(Sandbox(unsafe_exec=True), timeout_s=20)
    expected = {p.id: _expected_values(p) for p in problems}
    constant = "def {name}(*args):\n    return {value!r}\n"
    pairs = [(p, p.reference) for p in problems]
    # The most common expected value of each check, returned always: it must still fail.
    pairs += [(p, constant.format(name=p.meta["entry_point"], value=max(expected[p.id], key=expected[p.id].count)))
              for p in problems]
    outcomes = runner.run_many(pairs)
    n = len(problems)
    assert [p.id for p, o in zip(problems, outcomes[:n]) if not o.passed] == []
    assert [p.id for p, o in zip(problems, outcomes[n:]) if o.passed] == []


def load_code_problems_from_rows(rows):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return load_code_problems(path)


def _expected_values(problem):
    """The right-hand sides of the check's asserts, as Python literals (our own tests)."""
    tree = ast.parse(problem.meta["tests"])
    return [ast.literal_eval(node.test.comparators[0]) for node in ast.walk(tree) if isinstance(node, ast.Assert)]
