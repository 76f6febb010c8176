"""A finished skill evaluated on other questions (`coevo eval skill`): transfer without training."""

from __future__ import annotations

from typing import Any

from coevo.algorithms.decoevo.config import DecoEvoRoles
from coevo.algorithms.decoevo.data import gold_scores
from coevo.algorithms.decoevo.backbone import seeded
from coevo.eval.constraints import constraint_judgment, constraints_of, pass_rate_metrics, passed
from coevo.roles.decoevo import (
    Solver,
    blind,
)
from coevo.tasks.loaders import DataError
from coevo.core.types import Sample


# ====================================================================== transfer
def evaluate_skill(skill: str, samples: list[Sample], model: Any, grader: Any | None = None,
                   roles: DecoEvoRoles | None = None, seed: int = 0) -> dict[str, Any]:
    """Apply a final solver skill to other data, no updates; its score (0-1). `roles` gives the
    decoding (the solver's answers, the grader's), the config's `roles:` block. A benchmark that
    grades without gold rubrics (EQ-Bench CW v3, LLMEval-Med) is graded its own way
    (roles/benchmark_graders.py) by the grader's model; any other data needs gold rubrics."""
    from coevo.roles.benchmark_graders import own_grader
    from coevo.roles.judging import grader_for

    roles = roles or DecoEvoRoles()
    own = own_grader(samples)
    lacking = [s.id for s in samples if s.rubric is None or not s.rubric.criteria]
    if own is None and lacking:
        raise DataError(f"every sample needs a gold rubric to be graded; {lacking[:3]} have none (or give a "
                        "benchmark graded its own way: eqbench_cw:PATH, llmeval_med:PATH)")
    solver = Solver(model, seeded(roles.solver.sampling.answer, seed))
    responses = [group[0] for group in solver.solve([blind(s) for s in samples], skill)]
    sampling = seeded(roles.grader.sampling, seed)
    judge = own(grader or model, sampling) if own is not None else grader_for(grader or model, sampling,
                                                                               roles.grader.kind)
    graded = gold_scores(judge, samples, responses)
    scores = [g for g, _ in graded]
    valid = [g for g in scores if g is not None]
    outcomes = [passed(constraint_judgment(r, constraints_of(s))) for s, r in zip(samples, responses)
                if constraints_of(s)]
    return {"grading": getattr(judge, "name", "grader"), "n_samples": len(samples), "n_valid": len(valid),
            "n_invalid": len(scores) - len(valid),
            "gold_mean": sum(valid) / len(valid) if valid else None,
            **pass_rate_metrics(outcomes),
            "scores": {s.id: g for s, g in zip(samples, scores)}}
