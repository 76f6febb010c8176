"""The code validator's verdicts on hand-made buggy solutions, and the critic-test parser."""


import pytest

from coevo.tasks.code import load_humaneval
from coevo.core.types import Proposal, Sample
from coevo.validators.code import (CodeValidator, ReferenceTests, parse_proposal, parse_testcase,
                                   run_reference_tests, stdout_equal, values_equal)
from coevo.validators.sandbox import Sandbox

LONGEST = load_humaneval(ids=["HumanEval/12"])[0]
# Returns the LAST longest string (the spec wants the first) and crashes on [].
LAST_LONGEST = (
    "```python\n"
    "def longest(strings):\n"
    "    best = strings[0]\n"
    "    for s in strings:\n"
    "        if len(s) >= len(best):\n"
    "            best = s\n"
    "    return best\n"
    "```\n"
)
DOUBLER = Sample(id="stdin/double", prompt="Read n, print 2n.",
                 reference="n = int(input())\nprint(n * 2)\n",
                 meta={"entry_point": "main", "tests": [], "task": "code"})


@pytest.fixture(scope="module")
def validator():
    # Verdict logic does not depend on the isolation: use it where present, else unsafe.
    return CodeValidator(Sandbox(unsafe_exec=True), timeout_s=3)


def verdict(validator, sample, output, critic_text):
    return validator.check(sample, output, parse_proposal(sample.id, output, critic_text))


@pytest.mark.parametrize("critic, expected", [
    ("<think>ties?</think>\n<testcase> CALL: longest(['ab', 'cd']) </testcase>", "caught"),
    ("<testcase>CALL: longest(['a', 'bbb', 'cc'])</testcase>", "survived"),
    ("<testcase>CALL: longest([])</testcase>", "caught"),        # the candidate crashes
    ("<testcase>CALL: longest(5)</testcase>", "invalid"),        # the reference crashes too
    ("<testcase>CALL: longest(</testcase>", "invalid"),          # not Python
    ("I think it is fine.", "invalid"),                          # no test at all
])
def test_call_verdicts(validator, critic, expected):
    result = verdict(validator, LONGEST, LAST_LONGEST, critic)
    assert result.verdict == expected, result


def test_caught_details_carry_both_outputs(validator):
    result = verdict(validator, LONGEST, LAST_LONGEST, "<testcase>CALL: longest(['ab', 'cd'])</testcase>")
    assert result.details["reference_output"] == '"ab"'
    assert result.details["candidate_output"] == '"cd"'
    assert result.reason == "outputs differ" and result.seconds > 0


def test_correct_solution_survives_every_valid_test(validator):
    for critic in ("CALL: longest([])", "CALL: longest(['x', 'yy', 'zz'])", "CALL: longest(['a'])"):
        assert verdict(validator, LONGEST, LONGEST.reference, critic).verdict == "survived"


def test_timeouts_and_early_exits_are_caught(validator):
    slow = "def longest(strings):\n    while True:\n        pass\n"
    result = verdict(validator, LONGEST, slow, "<testcase>CALL: longest(['a'])</testcase>")
    assert result.verdict == "caught" and "timed out" in result.reason
    quitter = "import sys\nsys.exit(0)\n"
    result = verdict(validator, LONGEST, quitter, "<testcase>CALL: longest(['a'])</testcase>")
    assert result.verdict == "caught"


def test_reference_timeout_makes_the_test_invalid():
    box = CodeValidator(Sandbox(unsafe_exec=True), timeout_s=1)
    slow_ref = Sample(id="slow", prompt="p", reference="def f(n):\n    while n: pass\n    return 0\n",
                      meta={"entry_point": "f", "tests": "assert f(0) == 0"})
    result = verdict(box, slow_ref, "def f(n):\n    return 0\n", "CALL: f(1)")
    assert result.verdict == "invalid" and "reference" in result.reason


@pytest.mark.parametrize("critic, expected", [
    ("<testcase> STDIN: 2 </testcase>", "survived"),   # 2*2 == 2+2
    ("<testcase>STDIN: 5</testcase>", "caught"),
    ("<testcase>STDIN: abc</testcase>", "invalid"),    # int('abc') fails on the reference
])
def test_stdin_verdicts(validator, critic, expected):
    buggy = "n = int(input())\nprint(n + 2)\n"
    assert verdict(validator, DOUBLER, buggy, critic).verdict == expected


def test_stdin_candidate_crash_is_caught(validator):
    assert verdict(validator, DOUBLER, "raise SystemExit(1)", "STDIN: 3").verdict == "caught"


def test_value_comparison_rules(validator):
    floats = Sample(id="f", prompt="p", reference="def f():\n    return 0.1 + 0.2\n",
                    meta={"entry_point": "f", "tests": "assert True"})
    assert verdict(validator, floats, "def f():\n    return 0.3\n", "CALL: f()").verdict == "survived"
    assert verdict(validator, floats, "def f():\n    return 0.31\n", "CALL: f()").verdict == "caught"
    seqs = Sample(id="s", prompt="p", reference="def f():\n    return [1, 2]\n",
                  meta={"entry_point": "f", "tests": "assert True"})
    assert verdict(validator, seqs, "def f():\n    return (1, 2)\n", "CALL: f()").verdict == "caught"
    sets = Sample(id="t", prompt="p", reference="def f():\n    return {'b', 'a', 'c'}\n",
                  meta={"entry_point": "f", "tests": "assert True"})
    assert verdict(validator, sets, "def f():\n    return set('cab')\n", "CALL: f()").verdict == "survived"
    assert values_equal(1, 1.0) and not values_equal(True, 2)
    assert stdout_equal("1 2\n\n", "1 2") and stdout_equal("0.3", "0.30000000000000004")


@pytest.mark.parametrize("text, kind, body", [
    ("<testcase> CALL: f(1, 2) </testcase>", "call", "f(1, 2)"),
    ("<think>a <testcase> inside think</testcase></think><testcase>CALL: f(3)</testcase>", "call", "f(3)"),
    ("<testcase>CALL: f([1, 2]) == 3</testcase>", "call", "f([1, 2])"),
    ("<testcase>assert f(x=1) == 2</testcase>", "call", "f(x=1)"),
    ("<testcase>\n```python\nCALL: f('a')\n```\n</testcase>", "call", "f('a')"),
    ("CALL: g(  [ ] )", "call", "g([])"),
    ("Option A (CALL format)\n<testcase> call: f(1)", "call", "f(1)"),  # no closing tag
    ("<testcase>f(7)</testcase><testcase>f(8)</testcase>", "call", "f(7)"),
    ("<testcase> STDIN: 3 4\n5 </testcase>", "stdin", "3 4\n5\n"),
    ("CALL: f(2)\nThis fails because f(2) should be 4.", "call", "f(2)"),
])
def test_parse_testcase_leniently(text, kind, body):
    test, why = parse_testcase(text)
    assert test is not None, why
    assert (test.kind, test.body) == (kind, body)


@pytest.mark.parametrize("text", ["", "no test here", "<testcase>CALL: 1 + 1</testcase>",
                                  "<testcase>CALL: def x(): pass</testcase>",
                                  "<testcase>CALL: f(" + "1, " * 10000 + ")</testcase>"])
def test_unreadable_tests_are_rejected(text):
    test, why = parse_testcase(text)
    assert test is None and why


def test_call_expression_never_runs_in_process(validator, tmp_path):
    marker = tmp_path / "pwned"
    critic = f"<testcase>CALL: __import__('pathlib').Path({str(marker)!r}).write_text('x')</testcase>"
    proposal = parse_proposal(LONGEST.id, LONGEST.reference, critic)
    assert proposal.valid and not marker.exists()
    validator.check(LONGEST, LONGEST.reference, proposal)
    if validator.sandbox.isolation == "bwrap":
        assert not marker.exists()


def test_every_call_is_counted_and_references_are_cached():
    box = CodeValidator(Sandbox(unsafe_exec=True), timeout_s=3)
    items = [(LONGEST, LAST_LONGEST, parse_proposal(LONGEST.id, LAST_LONGEST, t))
             for t in ("CALL: longest(['a'])", "CALL: longest(['b'])", "nothing")]
    verdicts = box.check_many(items)
    assert [v.verdict for v in verdicts] == ["survived", "survived", "invalid"]
    assert box.calls == 3 and box.sandbox.executions == 4
    box.check(LONGEST, LAST_LONGEST, items[0][2])
    assert box.calls == 4 and box.sandbox.executions == 5  # reference answered from the cache


def test_parsed_proposal_fields_are_used():
    box = CodeValidator(Sandbox(unsafe_exec=True), timeout_s=3)
    proposal = Proposal(sample_id=LONGEST.id, output="", text="ignored",
                        parsed={"kind": "call", "test": "longest(['ab', 'cd'])"})
    assert box.check(LONGEST, LAST_LONGEST, proposal).verdict == "caught"


def test_reference_tests_for_pass_at_1_and_enumerative_cost():
    runner = ReferenceTests(Sandbox(unsafe_exec=True))
    good, bad = runner.run_many([(LONGEST, LONGEST.reference), (LONGEST, LAST_LONGEST)])
    assert good.passed and not bad.passed and good.n_tests == 3
    assert runner.calls == 6
    assert run_reference_tests(LONGEST, "def longest(strings):\n    return None\n").passed is False


def test_missing_reference_is_invalid(validator):
    sample = Sample(id="x", prompt="p", meta={"entry_point": "f"})
    assert verdict(validator, sample, "def f(): pass", "CALL: f()").verdict == "invalid"


def test_objects_compare_without_memory_addresses(validator):
    sample = Sample(id="o", prompt="p", reference="def f():\n    return object\n",
                    meta={"entry_point": "f", "tests": "assert True"})
    assert verdict(validator, sample, "def f():\n    return object\n", "CALL: f()").verdict == "survived"
    lam = Sample(id="l", prompt="p", reference="def f():\n    return lambda: 1\n",
                 meta={"entry_point": "f", "tests": "assert True"})
    assert verdict(validator, lam, "def f():\n    return lambda: 1\n", "CALL: f()").verdict == "survived"


def test_one_reference_run_per_problem_and_test_in_a_batch():
    box = CodeValidator(Sandbox(unsafe_exec=True), timeout_s=3)
    proposal = parse_proposal(LONGEST.id, "", "CALL: longest(['ab', 'cd'])")
    outputs = [LAST_LONGEST, LONGEST.reference, LAST_LONGEST]
    verdicts = box.check_many([(LONGEST, out, proposal) for out in outputs])
    assert [v.verdict for v in verdicts] == ["caught", "survived", "caught"]
    assert box.calls == 3 and box.sandbox.executions == 4
