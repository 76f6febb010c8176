"""`coevo validate code`: one JSON object, exit 0 for every verdict, clear errors otherwise."""

import json
import subprocess
import sys

import pytest

LAST_LONGEST = (
    "def longest(strings):\n"
    "    best = strings[0]\n"
    "    for s in strings:\n"
    "        if len(s) >= len(best):\n"
    "            best = s\n"
    "    return best\n"
)


def coevo(*args):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def solution(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "solution.py"
    path.write_text(LAST_LONGEST)
    return path


@pytest.mark.parametrize("test, expected", [
    ("CALL: longest(['ab', 'cd'])", "caught"),
    ("<testcase> CALL: longest(['a', 'bb']) </testcase>", "survived"),
    ("CALL: longest(3)", "invalid"),
])
def test_validate_code_json_contract(solution, test, expected):
    proc = coevo("validate", "code", "--problem", "HumanEval/12", "--solution", solution,
                 "--test", test, "--json", "--unsafe-exec")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["verdict"] == expected
    for key in ("reference_output", "candidate_output", "reason", "seconds"):
        assert key in result
    if expected == "caught":
        assert result["reference_output"] == '"ab"' and result["candidate_output"] == '"cd"'


def test_validate_code_errors_are_one_line_exit_2(solution, tmp_path):
    proc = coevo("validate", "code", "--problem", "HumanEval/999", "--solution", solution,
                 "--test", "CALL: longest([])", "--json")
    assert proc.returncode == 2 and "HumanEval/999" in proc.stderr
    proc = coevo("validate", "code", "--problem", "HumanEval/12", "--solution", tmp_path / "none.py",
                 "--test", "CALL: longest([])", "--json")
    assert proc.returncode == 2 and "none.py" in proc.stderr
