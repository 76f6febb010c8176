"""Replay answers for every DecoEvo role, keyed on each template's own wording."""

from __future__ import annotations

import json

from coevo.llm.replay import ReplayModel

# A phrase unique to each role's template: the replay rule matches on it.
SOLVER = "Write your answer to the task now."
GENERATOR = "You write a grading rubric"
JUDGE = "Grade the answer against each criterion"
SOLVER_REWRITER = "You improve a skill document"
STRUCTURAL = "You audit a grading rubric"
BLIND = "Compare two answers to the same task"
EXPLAIN = "Your preference is fixed"
GENERATOR_REWRITER = "You improve the principles"
GOLD = "You are an expert evaluator"
GOLD_SECRET = "GOLD-SECRET"


def rubric(*criteria):
    return json.dumps({"criteria": [{"criterion": c, "points": p} for c, p in criteria]})


def verdicts(*flags):
    return json.dumps({"verdicts": [{"id": f"c{i}", "rationale": f"reason {i}", "satisfied": f}
                                    for i, f in enumerate(flags, 1)]})


def rules(**override):
    """Default answers for every role; `override` replaces one role's rule list."""
    table = {
        "solver": [{"match": SOLVER, "completions": ["answer one", "answer two", "answer three"]}],
        "generator": [{"match": GENERATOR, "completions": [rubric(("Meets the length", 2), ("Avoids cliches", 1))]}],
        "judge": [{"match": JUDGE, "completions": [verdicts(True, False)]}],
        "solver_rewriter": [{"match": SOLVER_REWRITER,
                             "completions": [json.dumps({"diagnosis": "d", "skill": "NEW SOLVER SKILL"})]}],
        "structural": [{"match": STRUCTURAL, "completions": [json.dumps(
            {"rationale": "the rubric omits the audience", "adequacy": 6, "repair": "cover the audience"})]}],
        "blind": [{"match": BLIND, "completions": [json.dumps({"rationale": "A is vivid", "preference": "A"})]}],
        "explain": [{"match": EXPLAIN, "completions": [json.dumps(
            {"why_missed": "no vividness criterion", "principle": "check vivid detail"})]}],
        "generator_rewriter": [{"match": GENERATOR_REWRITER,
                                "completions": [json.dumps({"analysis": "a", "skill": "NEW GENERATOR SKILL"})]}],
        "gold": [{"match": GOLD, "completions": [json.dumps(
            {"criteria": [{"name": "quality", "score": 7, "reason": "fine"}]})]}],
    }
    table.update(override)
    return [rule for group in table.values() for rule in group]


def replay(**override) -> ReplayModel:
    return ReplayModel(rules=rules(**override))


def write_data(path, n=28):
    """n writing prompts with a one-criterion gold rubric whose text no role may see."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"q{i:02d}", "prompt": f"Write poem number {i} about the sea.",
                                "rubric": {"criteria": [{"name": "quality",
                                                         "description": f"{GOLD_SECRET} {i}",
                                                         "weight": 1}]}}) + "\n")
    return path
