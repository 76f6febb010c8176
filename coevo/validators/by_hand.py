"""The RLAC validators run by hand (`coevo validate code` / `coevo validate fact`): one check,
its result as a flat dict, the order of its keys the order they are printed in."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def check_code(problem: str, solution: Path, *, test: str | None, problems: str, timeout_s: float,
               unsafe_exec: bool) -> dict[str, Any]:
    """Run the critic's `test` on the reference solution and on the code in `solution`, both
    sandboxed (verdict caught, survived or invalid); without `test`, the problem's own tests
    on the candidate (passed or failed). A DataError names an unknown problem id."""
    from coevo.tasks.code import count_test_cases, load_code_problems
    from coevo.tasks.loaders import DataError
    from coevo.validators.code import CodeValidator, ReferenceTests, parse_proposal

    by_id = {s.id: s for s in load_code_problems(problems)}
    if problem not in by_id:
        raise DataError(f"no problem {problem!r} in {problems}; ids look like {next(iter(by_id), '?')!r}")
    sample = by_id[problem]
    code = solution.read_text(encoding="utf-8")
    start = time.monotonic()
    if test is None:
        runner = ReferenceTests(timeout_s=timeout_s, unsafe_exec=unsafe_exec)
        outcome = runner.run(sample, code)
        return {"problem": problem, "verdict": "passed" if outcome.passed else "failed",
                "reason": "every test passed" if outcome.passed else outcome.error,
                "status": outcome.status, "tests": count_test_cases(sample),
                "seconds": round(time.monotonic() - start, 4), "isolation": runner.sandbox.isolation}
    validator = CodeValidator(timeout_s=timeout_s, unsafe_exec=unsafe_exec)
    verdict = validator.check(sample, code, parse_proposal(problem, code, test))
    return {"problem": problem, "verdict": verdict.verdict, "reason": verdict.reason,
            "test": verdict.details.get("test"),
            "reference_output": verdict.details.get("reference_output"),
            "candidate_output": verdict.details.get("candidate_output"),
            "reference_status": verdict.details.get("reference_status"),
            "candidate_status": verdict.details.get("candidate_status"),
            "seconds": round(time.monotonic() - start, 4), "isolation": validator.sandbox.isolation}


def check_fact(entity: str, sentence: str, fact: str, *, corpus: str, judge: str, mode: str) -> dict[str, Any]:
    """First authenticity (is `fact` in `sentence`?), then verification against `corpus`
    (BM25 passages and an entailment judge, `mode` llm, lexical or hybrid), as RLAC's fact
    validator does for a critic's claimed wrong fact about `entity`."""
    from coevo.core.types import Proposal, Sample
    from coevo.validators.facts import build_fact_validator

    model = None
    if mode != "lexical":  # word overlap alone loads no model
        from coevo.llm.specs import load_model

        model = load_model(judge)
    validator = build_fact_validator(model, corpus=corpus, mode=mode)
    sample = Sample(id="cli", prompt="", meta={"entity": entity})
    start = time.monotonic()
    verdict = validator.check(sample, sentence, Proposal(
        sample_id="cli", output=sentence, text=f"sentence: 1\nerror_fact: {fact}"))
    return {"entity": entity, "verdict": verdict.verdict, "reason": verdict.reason,
            "authenticity": verdict.details.get("authenticity"),
            "judge_answer": verdict.details.get("judge_answer"),
            "passages": verdict.details.get("passages", []),
            "in_corpus": validator.knowledge.resolve(entity) is not None,
            "validator_calls": validator.calls, "llm_calls": validator.llm_calls,
            "seconds": round(time.monotonic() - start, 4)}
