"""bundled:code_easy: every row well formed, every reference passes its own tests in the
sandbox, and the prompts' examples agree with the references (a wrong example would teach
the generator, and mislead the critic, about what the function does)."""

import ast
import json
from importlib import resources

import pytest

from coevo.tasks.code import (BUNDLED_CODE, count_test_cases, entry_parameters, example_calls,
                              load_code_problems)
from coevo.tasks.loaders import DataError
from coevo.validators.code import ReferenceTests
from coevo.validators.sandbox import Sandbox


@pytest.fixture(scope="module")
def problems():
    return load_code_problems("bundled:code_easy")


def test_rows_are_well_formed(problems):
    assert 55 <= len(problems) <= 70
    assert len({p.id for p in problems}) == len(problems)
    assert len({p.meta["entry_point"] for p in problems}) == len(problems)  # no problem twice
    for p in problems:
        entry = p.meta["entry_point"]
        assert p.meta["task"] == "code" and p.meta["source"] == "bundled:code_easy"
        assert p.meta["difficulty"] in (1, 2, 3)
        # The reference is the prompt completed (HumanEval's shape) and defines the entry point.
        assert p.reference.startswith(p.prompt), p.id
        defined = [n.name for n in ast.parse(p.reference).body if isinstance(n, ast.FunctionDef)]
        assert defined == [entry], p.id
        assert entry_parameters(p), p.id  # the critic's answer schema is built from these
        assert "def check(candidate)" in p.meta["tests"] and count_test_cases(p) >= 4, p.id
        assert example_calls(p), f"{p.id}: the prompt shows no example call"
    # Graded: each level holds a fair share, so the set is neither all trivial nor all hard.
    levels = [p.meta["difficulty"] for p in problems]
    assert min(levels.count(level) for level in (1, 2, 3)) >= 15


def test_every_reference_passes_its_tests_and_a_wrong_solution_fails(problems):
    runner = ReferenceTests(Sandbox(unsafe_exec=True), timeout_s=20)
    wrong = "def {name}(*args):\n    return None\n"
    pairs = [(p, p.reference) for p in problems] + [(p, wrong.format(name=p.meta["entry_point"])) for p in problems]
    outcomes = runner.run_many(pairs)
    n = len(problems)
    assert [p.id for p, o in zip(problems, outcomes[:n]) if not o.passed] == []
    assert [p.id for p, o in zip(problems, outcomes[n:]) if o.passed] == []


def test_the_prompts_examples_are_what_the_reference_returns(problems):
    # The examples are literals (`>>> f(args)` then the value's repr); running the reference
    # here is plain exec of our own code, not of a model's.
    for p in problems:
        namespace: dict = {}
        exec(compile(p.reference, p.id, "exec"), namespace)
        function = namespace[p.meta["entry_point"]]
        lines = p.prompt.splitlines()
        shown = [(ln.strip()[4:], lines[i + 1].strip()) for i, ln in enumerate(lines) if ln.strip().startswith(">>>")]
        assert shown, p.id
        for call, value in shown:
            node = ast.parse(call, mode="eval").body
            assert isinstance(node, ast.Call) and node.func.id == p.meta["entry_point"], f"{p.id}: {call}"
            args = [ast.literal_eval(arg) for arg in node.args]
            assert function(*args) == ast.literal_eval(value), f"{p.id}: {call} shows {value}"


def test_the_file_ships_in_the_package_and_unknown_names_are_refused():
    names = [json.loads(line)["id"] for line in
             resources.files("coevo.tasks").joinpath("data", BUNDLED_CODE["code_easy"]).read_text("utf-8").splitlines()]
    assert names[0] == "code_easy/0"
    with pytest.raises(DataError, match="bundled:code_easy"):
        load_code_problems("bundled:code_hard")
    assert [p.id for p in load_code_problems("bundled:code_easy", limit=2)] == ["code_easy/0", "code_easy/1"]
