"""Checkable graders: a DecoEvo `roles.grader.model` whose score is decided by code, not a model.

    roles: {grader: {model: "python:coevo.learning.graders:constraint_grader"}}

A 135M grader's rubric grades barely agree with themselves, so a learning curve measured
with one could not tell a learned behaviour from noise. The bundled writing prompts carry
machine-checkable constraints (`meta.constraints`, coevo/eval/constraints.py); this grader
scores an answer by the share of its question's constraints it meets.
"""

from __future__ import annotations

from coevo.eval.constraints import check
from coevo.learning.rewards import UnknownPrompt, constraints_for

__all__ = ["UnknownPrompt", "constraint_grader", "constraints_for"]


def constraint_grader(question: str, answer: str, rubric: dict | None = None) -> float:
    """DecoEvo grader `grader(question, answer, rubric) -> [0, 1]`: the share of the
    question's constraints `answer` meets (1.0 for a question without any). The rubric is
    ignored: the constraints are the checkable part of what the prompt asks."""
    constraints = constraints_for(question)
    if not constraints:
        return 1.0
    return sum(check(answer, c) for c in constraints) / len(constraints)
