"""DecoEvo's configuration: methods, partitions, the roles (the backbone, each optimisation
role's decoding on it, the grader), and the paper's defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from coevo.core.strict import StrictModel
from coevo.settings.config import DataConfig, ExperimentConfig
from coevo.audit.config import AuditConfig
from coevo.monitor.config import MonitorConfig, Watches
from coevo.settings.role_specs import ModelRole, RoleSet, RoleSpec
from coevo.core.types import JudgeSampling, Sampling

Method = Literal["zero_shot", "skillopt", "sc_coevo", "decoevo"]
METHODS: tuple[str, ...] = ("zero_shot", "skillopt", "sc_coevo", "decoevo")
PARTITIONS: tuple[str, ...] = ("pilot", "train", "probe", "solver_gate", "generator_gate",
                               "diagnostic", "test")

DEFAULT_SOLVER_SKILL = (
    "Read the task carefully and meet every explicit requirement: length, form, audience, "
    "required elements and ending. Stay on the topic and write clearly."
)
DEFAULT_GENERATOR_SKILL = (
    "Turn each explicit requirement of the task into one checkable criterion. Phrase every "
    "criterion positively; write things to avoid as 'Avoids ...'. Give the central goal the most points."
)


# ====================================================================== config
def _python_spec(value: str | None, where: str) -> str | None:
    # Only code may stand for an optimisation role: a model there would break the one backbone.
    if value is not None and not value.strip().startswith("python:"):
        raise ValueError(f"{where} must be a python:MODULE:FUNCTION spec, got {value!r}; a model for the "
                         "optimisation roles is roles.backbone.model")
    return value


class SkillFormAudit(StrictModel):
    """The structural audit of a rewrite itself: a candidate skill that is no longer a skill
    (under `min_words` words, or no sentence that instructs) is refused before its gate
    (rules.skill_form). The paper's rewriters are asked for skills and it names no such
    check; the backbones it uses do not write a title in place of a skill, a 135M one does."""

    enabled: bool = True
    #: The shortest skill: one instruction with its object ("Count the words and stop at the limit").
    min_words: int = Field(8, ge=1)


class BackboneRole(ModelRole):
    """The ONE frozen LLM behind every optimisation role (solver, rubric generator, judge,
    auditor, rewriter): `model` (default `smollm2`) and its backend options."""


class SolverSampling(StrictModel):
    """The solver's two uses: its answers (the method's own, graded) and the stochastic
    rollouts of the near-tie audit (m per probe question)."""

    answer: Sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=384)
    rollout: Sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=384)


class SolverRole(RoleSpec):
    """Answers questions under the current solver skill S (on the backbone)."""

    sampling: SolverSampling = SolverSampling()


class RubricGeneratorRole(RoleSpec):
    """Writes a rubric per question under the current rubric-generator skill G (on the
    backbone). Named `rubric_generator`, not `generator`: RLAC's `generator` is the trained
    policy, and one name does not mean two roles across algorithms."""

    sampling: Sampling = Sampling(temperature=0.3, top_p=0.95, max_tokens=400)


class CriterionJudgeRole(RoleSpec):
    """Judges an answer against a generated rubric, one binary verdict per criterion (on the
    backbone).

    The scoring roles (criterion judge, auditor, gold grader) take `scoring: expected |
    sampled` (`JudgeSampling`): `expected`, the default, scores by the probabilities of the
    verdict's or grade's tokens where the backend returns them (a greedy judge returns them
    too), and falls back to the written value where it does not, saying so once.
    """

    sampling: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=400)
    #: Code standing for the judge (no backbone call): `python:MODULE:FUNCTION`,
    #: `function(question, answer, criterion) -> bool | {"satisfied": bool, "rationale": str}`,
    #: one call per criterion (e.g. coevo.eval.checkable_graders:criterion_met). None: the backbone judges.
    scorer: str | None = None

    @field_validator("scorer")
    @classmethod
    def _code_only(cls, value: str | None) -> str | None:
        return _python_spec(value, "roles.judge.scorer")


class AuditorRole(RoleSpec):
    """The structural and contrastive auditors of the outer step (on the backbone). Its
    `scoring` (see CriterionJudgeRole) applies to the structural auditor's adequacy grade;
    the contrastive auditor's preferences are decisions, not scores."""

    sampling: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=300)
    #: Code standing for the structural auditor: `function(question, rubric) -> float in [0, 1]
    #: | {"adequacy", "rationale", "repair"}` (rubric: {criteria: [{name, description, weight}]}).
    structural_scorer: str | None = None
    #: Code standing for the near-tie audit's blind stage (stage 2, the explanation, stays on
    #: the backbone): `function(question, a, b) -> "a" | "b" | "tie" | "equivalent" |
    #: {"preference", "rationale"}`.
    preference_scorer: str | None = None

    @field_validator("structural_scorer", "preference_scorer")
    @classmethod
    def _code_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _python_spec(value, f"roles.auditor.{info.field_name}")


class RewriterRole(RoleSpec):
    """The solver-skill and rubric-generator-skill rewriters (on the backbone)."""

    sampling: Sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=600)


class GraderRole(ModelRole):
    """The final gold-rubric grader (test and diagnostic grading only; no optimisation
    decision reads it). Its `scoring`: see CriterionJudgeRole."""

    #: The final gold-rubric grader: the paper's is the benchmark's own (WritingBench: its
    #: critic model). None: the backbone grades its own answers (a departure, warned about).
    model: str | None = None
    sampling: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=400)
    #: How it grades: `gold_rubric`, 1-10 per criterion averaged by weight (WritingBench's
    #: way), or `healthbench`, each criterion met or not with its signed points, scored as
    #: HealthBench does (points met over positive points, clipped to [0, 1]).
    kind: Literal["gold_rubric", "healthbench"] = "gold_rubric"


#: The optimisation roles: they have no model of their own, the backbone fills them all.
OPTIMISATION_ROLES = ("solver", "rubric_generator", "judge", "auditor", "rewriter")


class DecoEvoRoles(RoleSet):
    """`roles:` of DecoEvo: the one frozen backbone (model and options), the decoding of each
    optimisation role on it, and the gold-rubric grader (a model of its own, or the backbone).
    Greedy (T 0) roles are shared across seeds through the cache."""

    backbone: BackboneRole = BackboneRole()
    solver: SolverRole = SolverRole()
    rubric_generator: RubricGeneratorRole = RubricGeneratorRole()
    judge: CriterionJudgeRole = CriterionJudgeRole()
    auditor: AuditorRole = AuditorRole()
    rewriter: RewriterRole = RewriterRole()
    grader: GraderRole = GraderRole()

    @model_validator(mode="before")
    @classmethod
    def _one_backbone(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in OPTIMISATION_ROLES:
                if isinstance(data.get(name), dict) and "model" in data[name]:
                    raise ValueError(f"{name}.model: DecoEvo's optimisation roles share one frozen LLM; "
                                     "set roles.backbone.model instead")
        return data


class Partitions(StrictModel):
    """Shares of the seven disjoint partitions; `sizes` caps a partition (tiny budgets)."""

    fractions: dict[str, float] = Field(default_factory=lambda: {
        "pilot": 0.05, "train": 0.35, "probe": 0.1, "solver_gate": 0.1, "generator_gate": 0.1,
        "diagnostic": 0.1, "test": 0.2})
    sizes: dict[str, int] = Field(default_factory=dict)
    seed: int = 0

    @model_validator(mode="after")
    def _names(self) -> "Partitions":
        for label, keys in (("fractions", set(self.fractions)), ("sizes", set(self.sizes))):
            unknown = keys - set(PARTITIONS)
            if unknown:
                raise ValueError(f"partitions.{label} has unknown name(s) {sorted(unknown)}; "
                                 f"the partitions are {list(PARTITIONS)}")
        missing = set(PARTITIONS) - set(self.fractions)
        if missing:
            raise ValueError(f"partitions.fractions lacks {sorted(missing)}; give all of {list(PARTITIONS)}")
        return self


#: Where each old key went: the old top-level model keys, and those of the old `models` /
#: `sampling` blocks.
DECOEVO_MOVED = {
    "model": "roles.backbone.model", "grader_model": "roles.grader.model", "model_options": "roles.backbone.options",
    "models.backbone": "roles.backbone.model", "models.grader": "roles.grader.model",
    "sampling.solver": "roles.solver.sampling.answer", "sampling.rollout": "roles.solver.sampling.rollout",
    "sampling.generator": "roles.rubric_generator.sampling", "sampling.judge": "roles.judge.sampling",
    "sampling.auditor": "roles.auditor.sampling", "sampling.rewriter": "roles.rewriter.sampling",
    "sampling.grader": "roles.grader.sampling",
}


class DecoEvoMonitor(MonitorConfig):
    """DecoEvo is watched inner step by inner step against its gold grades and, since its
    rubric-generator skill is part of the grading and evolves, the audit's fooled rate."""

    WATCHES = Watches(algorithm="decoevo", gold=True, models=False, stop=False, audit=True)


class DecoEvoAudit(AuditConfig):
    """DecoEvo's gate can refuse a rubric-generator update whose audit is flagged."""

    ALGORITHM = "decoevo"


class DecoEvoConfig(ExperimentConfig):
    """`algorithm: decoevo` — the four methods on one backbone, several seeds."""

    MOVED_KEYS = DECOEVO_MOVED

    algorithm: Literal["decoevo"] = "decoevo"
    data: DataConfig = DataConfig()
    roles: DecoEvoRoles = DecoEvoRoles()
    methods: list[Method] = Field(default_factory=lambda: list(METHODS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4])
    partitions: Partitions = Partitions()
    inner_steps: int = Field(8, ge=0)    # T: the solver-edit budget, the same for every method
    batch_size: int = Field(4, ge=1)     # train questions per inner step
    max_failures: int = Field(8, ge=1)   # unmet criteria shown to the solver rewriter
    delta: float = 0.02                  # solver gate margin
    #: Answers per solver-gate question per skill; the gate compares their mean score. More
    #: answers shrink the gate's sampling noise (gate_noise.py measures it) without more
    #: questions. The paper does not say; 1 is one answer, as everywhere else in the loop.
    gate_samples: int = Field(1, ge=1)
    k: int = Field(3, ge=1)              # outer step every k inner steps ...
    s: int = Field(2, ge=1)              # ... or after s consecutive solver rejections
    m: int = Field(4, ge=2)              # stochastic rollouts per probe question
    epsilon: float = 0.1                 # near-tie threshold on rubric score gaps
    max_pairs: int = Field(8, ge=1)      # P: near-tie pairs audited per outer step
    eta: float = 0.05                    # Pareto improvement margin (and SC-CoEvo's margin)
    tau: float = 0.02                    # Pareto regression tolerance
    gamma: float = 0.2                   # resolution margin S(y+) - S(y-)
    min_criteria: int = Field(3, ge=1)
    max_criteria: int = Field(6, ge=1)
    max_skill_words: int = Field(200, ge=20)
    max_text_chars: int = Field(240, ge=20)  # cap on each free-text JSON field of a role's answer
    audit_spec: str = "decoevo_audit_spec_writing"  # bundled name or a file path
    #: A solver or rubric-generator rewrite that is no longer a skill is refused (rules.skill_form).
    skill_form: SkillFormAudit = SkillFormAudit()
    initial_solver_skill: str = DEFAULT_SOLVER_SKILL
    initial_generator_skill: str = DEFAULT_GENERATOR_SKILL
    #: The grading (criterion judge + the current rubric-generator skill) probed for gaming on
    #: the initial skills and after every outer step; `audit.gate` refuses a flagged G'
    #: (audit.py). Not in the paper; with `gate` off it changes no decision.
    audit: DecoEvoAudit = DecoEvoAudit()
    #: The reward-hacking monitor (docs/monitor.md), per inner step: the diagnostic questions'
    #: proxy scores against the `gold` anchor (their gold grades) and the `audit` anchor (the
    #: master keys the grading under the current G is not fooled by, from each round's audit).
    monitor: DecoEvoMonitor = DecoEvoMonitor()

    @model_validator(mode="after")
    def _check(self) -> "DecoEvoConfig":
        if "audit" in self.monitor.anchors and not self.audit.enabled:
            raise ValueError("monitor.anchors: 'audit' reads the judge audit of each round, which audit.enabled: false "
                             "turns off; set audit.enabled: true or drop the anchor")
        if len(set(self.methods)) != len(self.methods) or not self.methods:
            raise ValueError(f"methods must be a non-empty list without repeats, got {self.methods}")
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        if self.min_criteria > self.max_criteria:
            raise ValueError("min_criteria must be <= max_criteria")
        return self
