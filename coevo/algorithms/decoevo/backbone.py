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
from coevo.core.types import Sampling


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
class BackboneRoles:
    """The seven optimisation roles on the one backbone, plus the gold-rubric grader, built
    (the config's `roles:` block, `DecoEvoRoles`, says how to build them)."""

    solver: Solver
    generator: RubricGenerator
    judge: CriterionJudge  # or checkable.CheckedCriterionJudge, its stand-in in code
    solver_rewriter: SolverRewriter
    structural: StructuralAuditor  # or checkable.CheckedStructuralAuditor
    contrastive: ContrastiveAuditor
    generator_rewriter: GeneratorRewriter
    grader: Any  # GoldRubricJudge: final test and diagnostic grading only
    rollout_sampling: Sampling


def build_decoevo_roles(config: DecoEvoConfig, model: Any, grader_model: Any, seed: int) -> BackboneRoles:
    """Every DecoEvo role on `model` (the grader on `grader_model`), decoding seeded by `seed`;
    a scoring role the config gives code for (`scorer`, checkable.py) is that code instead."""
    from coevo.algorithms.decoevo.checkable import (
        CheckedContrastiveAuditor,
        CheckedCriterionJudge,
        CheckedStructuralAuditor,
        load_scorer,
    )
    from coevo.prompts import load_template
    from coevo.roles.judging import grader_for

    roles = config.roles
    spec = load_template(config.audit_spec).text.strip()
    chars, words = config.max_text_chars, config.max_skill_words
    judge_sampling, auditor_sampling = seeded(roles.judge.sampling, seed), seeded(roles.auditor.sampling, seed)
    return BackboneRoles(
        solver=Solver(model, seeded(roles.solver.sampling.answer, seed)),
        generator=RubricGenerator(model, seeded(roles.rubric_generator.sampling, seed),
                                  min_criteria=config.min_criteria, max_criteria=config.max_criteria,
                                  text_chars=chars),
        judge=(CriterionJudge(model, judge_sampling, text_chars=chars) if roles.judge.scorer is None else
               CheckedCriterionJudge(load_scorer(roles.judge.scorer, "judge", "roles.judge.scorer"),
                                     roles.judge.scorer, judge_sampling)),
        solver_rewriter=SolverRewriter(model, seeded(roles.rewriter.sampling, seed), max_words=words,
                                       text_chars=chars),
        structural=(StructuralAuditor(model, auditor_sampling, spec, text_chars=chars)
                    if roles.auditor.structural_scorer is None else CheckedStructuralAuditor(
                        load_scorer(roles.auditor.structural_scorer, "structural", "roles.auditor.structural_scorer"),
                        roles.auditor.structural_scorer)),
        contrastive=(ContrastiveAuditor(model, auditor_sampling, seed=seed, text_chars=chars)
                     if roles.auditor.preference_scorer is None else CheckedContrastiveAuditor(
                         load_scorer(roles.auditor.preference_scorer, "preference", "roles.auditor.preference_scorer"),
                         roles.auditor.preference_scorer, model, auditor_sampling, seed=seed, text_chars=chars)),
        generator_rewriter=GeneratorRewriter(model, seeded(roles.rewriter.sampling, seed), max_words=words,
                                             text_chars=chars),
        grader=grader_for(grader_model, seeded(roles.grader.sampling, seed), roles.grader.kind),
        rollout_sampling=seeded(roles.solver.sampling.rollout, seed),
    )
