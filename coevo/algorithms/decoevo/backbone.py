"""The frozen backbone in DecoEvo's roles (solver, rubric generator, judges, auditors, rewriters),
and the meter that counts their calls and tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coevo.algorithms.decoevo.config import DecoEvoConfig
from coevo.roles.decoevo import (
    ContrastiveAuditor,
    CriterionJudge,
    GeneratorRewriter,
    RubricGenerator,
    Solver,
    SolverRewriter,
    StructuralAuditor,
)
from coevo.types import Sampling


# ====================================================================== plumbing
class Meter:
    """Counts completions asked of a model and how many the run store's cache answered."""

    def __init__(self, inner: Any):
        self.inner, self.model_id = inner, inner.model_id
        # Passed on: without it every scoring role would think the backend has no logprobs.
        self.supports_logprobs = getattr(inner, "supports_logprobs", False)
        self.calls = self.cached = 0

    def generate(self, conversations, sampling, n=1):
        """The inner model's `generate`, counted."""
        return self._counted(self.inner.generate(conversations, sampling, n))

    def generate_each(self, conversations, samplings, n=1):
        """The inner model's `generate_each` (see llm/base.py), counted."""
        from coevo.llm.base import generate_each

        return self._counted(generate_each(self.inner, conversations, samplings, n))

    def _counted(self, out):
        self.calls += sum(len(group) for group in out)
        self.cached += sum(bool(getattr(c, "cached", False)) for group in out for c in group)
        return out


def seeded(sampling: Sampling, seed: int) -> Sampling:
    """`sampling` with the run's seed, unless it is greedy."""
    # Greedy decoding does not depend on the seed: dropping it lets every seed share answers.
    return sampling.model_copy(update={"seed": seed if sampling.temperature > 0 else None})


@dataclass
class DecoEvoRoles:
    """The seven optimisation roles on the one backbone, plus the gold-rubric grader."""

    solver: Solver
    generator: RubricGenerator
    judge: CriterionJudge
    solver_rewriter: SolverRewriter
    structural: StructuralAuditor
    contrastive: ContrastiveAuditor
    generator_rewriter: GeneratorRewriter
    grader: Any  # GoldRubricJudge: final test and diagnostic grading only
    rollout_sampling: Sampling


def build_decoevo_roles(config: DecoEvoConfig, model: Any, grader_model: Any, seed: int) -> DecoEvoRoles:
    """Every DecoEvo role on `model` (the grader on `grader_model`), decoding seeded by `seed`."""
    from coevo.prompts import load_template
    from coevo.roles.python_scorers import grader_for

    sp = config.sampling
    spec = load_template(config.audit_spec).text.strip()
    chars = config.max_text_chars
    return DecoEvoRoles(
        solver=Solver(model, seeded(sp.solver, seed)),
        generator=RubricGenerator(model, seeded(sp.generator, seed), min_criteria=config.min_criteria,
                                    max_criteria=config.max_criteria, text_chars=chars),
        judge=CriterionJudge(model, seeded(sp.judge, seed), text_chars=chars),
        solver_rewriter=SolverRewriter(model, seeded(sp.rewriter, seed), max_words=config.max_skill_words,
                                         text_chars=chars),
        structural=StructuralAuditor(model, seeded(sp.auditor, seed), spec, text_chars=chars),
        contrastive=ContrastiveAuditor(model, seeded(sp.auditor, seed), seed=seed, text_chars=chars),
        generator_rewriter=GeneratorRewriter(model, seeded(sp.rewriter, seed),
                                               max_words=config.max_skill_words, text_chars=chars),
        grader=grader_for(grader_model, seeded(sp.grader, seed)),
        rollout_sampling=seeded(sp.rollout, seed),
    )
