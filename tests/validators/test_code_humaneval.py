"""HumanEval through the sandbox, and the code-problem loaders."""

import json
import time

import pytest

from coevo.tasks.code import (candidate_program, count_test_cases, extract_code, load_code_problems,
                              load_humaneval)
from coevo.tasks.loaders import DataError
from coevo.validators.code import ReferenceTests, program_with_tests
from coevo.validators.sandbox import Sandbox


def test_all_164_canonical_solutions_pass_their_own_tests_in_the_sandbox():
    problems = load_humaneval()
    assert len(problems) == 164
    # Isolated where this machine allows (it must, after `make install`); the count of
    # passes is the point here, the attacks are tested in test_sandbox_attacks.py.
    runner = ReferenceTests(Sandbox(unsafe_exec=True), timeout_s=20)
    start = time.monotonic()
    outcomes = runner.run_many([(p, p.reference) for p in problems], progress="HumanEval")
    failed = [(p.id, o.status, o.error) for p, o in zip(problems, outcomes) if not o.passed]
    assert failed == []
    assert time.monotonic() - start < 180
    assert runner.calls == sum(count_test_cases(p) for p in problems) > 164


def test_humaneval_samples_carry_what_the_validator_needs():
    sample = load_humaneval(ids=["HumanEval/12"])[0]
    assert sample.meta["entry_point"] == "longest" and sample.meta["task"] == "code"
    assert sample.reference.startswith(sample.prompt) and "def check(candidate)" in sample.meta["tests"]
    assert count_test_cases(sample) == 3
    assert [s.id for s in load_code_problems("humaneval", limit=2)] == ["HumanEval/0", "HumanEval/1"]
    with pytest.raises(DataError, match="HumanEval/12"):
        load_humaneval(ids=["HumanEval/999"])


def test_candidate_programs_from_model_answers():
    sample = load_humaneval(ids=["HumanEval/12"])[0]
    answer = "Here you go:\n```python\ndef longest(strings: List[str]):\n    return None\n```\nDone."
    program = candidate_program(sample, answer)
    assert program.startswith("from typing import List, Optional") and "Here you go" not in program
    body_only = "    return strings[0] if strings else None\n"
    assert candidate_program(sample, body_only) == sample.prompt + body_only
    assert extract_code("```py\na = 1\n```\n```python\ndef f(): pass\n```", "f") == "def f(): pass\n"
    # Only a closing fence (measured: the 135M generator writes this): the code before it.
    assert extract_code("def f():\n    return 1\n```\nThis returns 1.", "f") == "def f():\n    return 1\n"
    assert extract_code("def f():\n    return 1\n```", "f") == "def f():\n    return 1\n"
    assert '"entry": "longest", "check_entry": true' in program_with_tests(sample, program)


def test_user_jsonl_and_mbpp_rows(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [
        {"id": "add", "prompt": "Write add(a, b).", "entry_point": "add",
         "reference": "def add(a, b):\n    return a + b\n",
         "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"], "difficulty": "easy"},
        {"task_id": 2, "text": "Write a function to square a number.",
         "code": "def square(x):\n    return x * x\n",
         "test_list": ["assert square(3) == 9", "assert square(0) == 0", "assert square(-2) == 4"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    add, square = load_code_problems(path)
    assert add.id == "add" and add.meta["difficulty"] == "easy" and count_test_cases(add) == 2
    assert square.id == "MBPP/2" and square.meta["entry_point"] == "square"
    assert count_test_cases(square) == 3
    runner = ReferenceTests(Sandbox(unsafe_exec=True))
    outcomes = runner.run_many([(add, add.reference), (square, square.reference),
                                (square, "def square(x):\n    return x + x\n")])
    assert [o.passed for o in outcomes] == [True, True, False] and runner.calls == 8


def test_bad_code_problem_files_name_the_fix(tmp_path):
    with pytest.raises(DataError, match="humaneval"):
        load_code_problems(tmp_path / "absent.jsonl")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "p", "entry_point": "f"}) + "\n")
    with pytest.raises(DataError, match="reference"):
        load_code_problems(path)
    path.write_text("{nope\n")
    with pytest.raises(DataError, match="line 1"):
        load_code_problems(path)


def test_a_main_block_does_not_break_the_tests():
    sample = load_humaneval(ids=["HumanEval/12"])[0]
    answer = sample.reference + "\nif __name__ == '__main__':\n    print(longest(input().split()))\n"
    assert ReferenceTests(Sandbox(unsafe_exec=True)).run(sample, answer).passed
