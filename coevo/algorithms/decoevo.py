"""DecoEvo: score-decoupled co-evolution of solver and rubric-generator skills.

One frozen backbone fills every role through role-specific prompts; what evolves is two
natural-language documents, the solver skill S and the rubric-generator skill G. No
weights change. Gold rubrics never reach an optimisation role: they grade the final test
answers and the post-hoc diagnostic trajectory only.

Data. Mutually disjoint partitions by a seeded hash: pilot, train, probe, solver_gate,
generator_gate, diagnostic, test.

Inner step t (solver). Solve a train batch with S; G writes a rubric per question; the
criterion-level judge marks each criterion satisfied or not, with a rationale (rubric
score = satisfied points / total points); the unmet criteria go to the solver-skill
rewriter, which consolidates them into general rules -> candidate S'. S' is accepted only
if its solver-gate score beats S by the margin delta, paired on the same questions and
the same cached per-question rubrics; otherwise S stays and the stall counter grows.

Outer step (generator), every k inner steps or after s consecutive rejections:
  audit    - structural auditor on probe questions: (question, G's rubric, the task
             family's fixed audit spec) -> adequacy, rationale, repair; never a response.
           - near-tie contrastive auditor: m stochastic rollouts per probe question,
             pairs whose rubric scores differ by <= epsilon, at most P pairs, smallest gaps
             first, no rollout reused; stage 1 sees ONLY question + two responses and
             fixes a blind preference; stage 2 then sees the rubric and its per-criterion
             breakdown and says why the rubric missed the difference + a missing principle.
             Pairs judged equivalent are dropped.
  distil   - the generator-skill rewriter turns both record sets into a candidate G'.
  verify   - on generator_gate, with frozen records (rollouts, pairs, blind preferences):
             structural adequacy A and the question-balanced resolution rate R (a record is
             resolved when S(y+) - S(y-) >= gamma under the rubric). Pareto rule: accept
             G' iff some available objective improves by >= eta and none regresses by more
             than tau. The solver's aggregate score never enters this decision.

Methods, same budgets (inner steps) and splits:
  zero_shot  no optimisation (the initial S),
  skillopt   inner steps only, G fixed,
  sc_coevo   DecoEvo with one change: G' is accepted when the current solver's aggregate
             score under G' rubrics beats the score under G rubrics by eta (score-coupled),
  decoevo    the method above.
Final evaluation: test answers with the final S, graded against gold rubrics by a separate
grader role; mean +- sd over seeds and a paired 95% CI of DecoEvo - SkillOpt.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from coevo.roles.decoevo import (
    ContrastiveAuditor,
    ContrastiveRecord,
    CriterionJudge,
    CriterionJudgment,
    GeneratedRubric,
    GeneratorRewriter,
    RubricGenerator,
    Solver,
    SolverRewriter,
    StructuralAuditor,
    blind,
    breakdown_block,
)
from coevo.algorithms.decoevo_summary import summarise
from coevo.algorithms.skills import GENERATOR, SOLVER, SkillHistory, export_markdown, history
from coevo.config import ConfigError, DataConfig, StrictModel
from coevo.eval.stats import mean_of_known
from coevo.progress import progress_bar
from coevo.store import RunStore
from coevo.tasks.loaders import DataError
from coevo.types import JudgeSampling, Rollout, Rubric, Sample, Sampling, Skill

Method = Literal["zero_shot", "skillopt", "sc_coevo", "decoevo"]
METHODS: tuple[str, ...] = ("zero_shot", "skillopt", "sc_coevo", "decoevo")
PARTITIONS: tuple[str, ...] = ("pilot", "train", "probe", "solver_gate", "generator_gate",
                               "diagnostic", "test")
_EPS = 1e-9  # margins are compared with a tolerance: 0.55 - 0.5 must count as 0.05

DEFAULT_SOLVER_SKILL = (
    "Read the task carefully and meet every explicit requirement: length, form, audience, "
    "required elements and ending. Stay on the topic and write clearly."
)
DEFAULT_GENERATOR_SKILL = (
    "Turn each explicit requirement of the task into one checkable criterion. Phrase every "
    "criterion positively; write things to avoid as 'Avoids ...'. Give the central goal the most points."
)


# ====================================================================== config
class DecoEvoSampling(StrictModel):
    """Decoding per role. Greedy (T 0) roles are shared across seeds through the cache.

    The scoring roles (criterion judge, auditor, gold grader) take `scoring: expected |
    sampled` (`JudgeSampling`): `expected`, the default, scores by the probabilities of the
    verdict's or grade's tokens where the backend returns them (a greedy judge returns them
    too), and falls back to the written value where it does not, saying so once. The
    auditor's scoring applies to the structural auditor's adequacy grade; the contrastive
    auditor's preferences are decisions, not scores.
    """

    solver: Sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=384)
    rollout: Sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=384)
    generator: Sampling = Sampling(temperature=0.3, top_p=0.95, max_tokens=400)
    judge: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=400)
    auditor: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=300)
    rewriter: Sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=600)
    grader: JudgeSampling = JudgeSampling(temperature=0.0, max_tokens=400)


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


class DecoEvoConfig(StrictModel):
    """`algorithm: decoevo` — the four methods on one backbone, several seeds."""

    algorithm: Literal["decoevo"] = "decoevo"
    data: DataConfig = DataConfig()
    model: str = "smollm2"               # the one frozen backbone behind every optimisation role
    grader_model: str | None = None      # final gold-rubric grader (default: the backbone)
    #: Backend options for both (n_threads, n_ctx, concurrency, ...; see `coevo models`).
    model_options: dict[str, Any] = Field(default_factory=dict)
    methods: list[Method] = Field(default_factory=lambda: list(METHODS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4])
    partitions: Partitions = Partitions()
    inner_steps: int = Field(8, ge=0)    # T: the solver-edit budget, the same for every method
    batch_size: int = Field(4, ge=1)     # train questions per inner step
    max_failures: int = Field(8, ge=1)   # unmet criteria shown to the solver rewriter
    delta: float = 0.02                  # solver gate margin
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
    initial_solver_skill: str = DEFAULT_SOLVER_SKILL
    initial_generator_skill: str = DEFAULT_GENERATOR_SKILL
    sampling: DecoEvoSampling = DecoEvoSampling()

    @model_validator(mode="after")
    def _check(self) -> "DecoEvoConfig":
        if len(set(self.methods)) != len(self.methods) or not self.methods:
            raise ValueError(f"methods must be a non-empty list without repeats, got {self.methods}")
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        if self.min_criteria > self.max_criteria:
            raise ValueError("min_criteria must be <= max_criteria")
        return self


# ====================================================================== acceptance rules
@dataclass
class Decision:
    accept: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def solver_gate(incumbent: list[float | None], candidate: list[float | None], delta: float) -> Decision:
    """Accept S' iff mean paired gain over the solver gate >= delta (same questions, same
    cached rubrics); questions where either judgment is unreadable are left out."""
    pairs = [(a, b) for a, b in zip(incumbent, candidate) if a is not None and b is not None]
    if not pairs:
        return Decision(False, "no solver-gate question was judged readably for both skills",
                        {"n_pairs": 0})
    inc = sum(a for a, _ in pairs) / len(pairs)
    cand = sum(b for _, b in pairs) / len(pairs)
    gain = cand - inc
    accept = gain >= delta - _EPS
    verb = "beats" if accept else "does not beat"
    return Decision(accept, f"gate score {cand:.3f} vs {inc:.3f} (gain {gain:+.3f}) {verb} the "
                            f"margin delta={delta:g} on {len(pairs)} paired questions",
                    {"gate_incumbent": inc, "gate_candidate": cand, "gain": gain, "n_pairs": len(pairs),
                     "gate_tie": gate_tie(inc, cand)})


def gate_tie(incumbent: float | None, candidate: float | None) -> bool | None:
    """Whether a gate comparison is an exact tie (None: nothing was compared).

    Equal up to float rounding (_EPS): a tie cannot be told apart by any margin delta, so
    the gate rejects the candidate without having measured a difference.
    """
    if incumbent is None or candidate is None:
        return None
    return abs(candidate - incumbent) <= _EPS


def outer_step_due(steps_since_outer: int, stall: int, k: int, s: int) -> bool:
    """The outer loop runs every k inner steps or after s consecutive solver rejections."""
    return steps_since_outer >= k or stall >= s


def select_near_ties(scores: list[list[float | None]], epsilon: float, max_pairs: int,
                     texts: list[list[str]] | None = None) -> list[tuple[int, int, int, float]]:
    """(question, i, j, gap) of at most `max_pairs` rollout pairs with gap <= epsilon.

    Smallest gaps first; a rollout is never used twice, so a question with many near-ties
    cannot dominate. Pairs of identical texts are skipped (nothing to distinguish).
    """
    candidates = []
    for q, row in enumerate(scores):
        for i in range(len(row)):
            for j in range(i + 1, len(row)):
                if row[i] is None or row[j] is None:
                    continue
                if texts is not None and texts[q][i].strip() == texts[q][j].strip():
                    continue
                gap = abs(row[i] - row[j])
                if gap <= epsilon + _EPS:
                    candidates.append((gap, q, i, j))
    used: set[tuple[int, int]] = set()
    chosen = []
    for gap, q, i, j in sorted(candidates):
        if len(chosen) >= max_pairs:
            break
        if (q, i) in used or (q, j) in used:
            continue
        used.update({(q, i), (q, j)})
        chosen.append((q, i, j, gap))
    return chosen


def resolution_rate(margins: list[tuple[str, float | None]], gamma: float) -> float | None:
    """Question-balanced share of frozen records whose margin S(y+) - S(y-) >= gamma.

    `margins` holds (question id, margin) per record; an unreadable judgment (None) counts
    as unresolved. None when there is no record (the objective is then unavailable).
    """
    by_question: dict[str, list[float]] = {}
    for qid, margin in margins:
        by_question.setdefault(qid, []).append(float(margin is not None and margin >= gamma - _EPS))
    if not by_question:
        return None
    return sum(sum(v) / len(v) for v in by_question.values()) / len(by_question)


def pareto_accept(deltas: dict[str, float | None], eta: float, tau: float) -> Decision:
    """Accept iff some available objective improves by >= eta and none drops by more than tau.

    `deltas` maps objective -> candidate minus incumbent (None = unavailable, e.g. no
    frozen contrastive record). No weighted aggregation of the objectives.
    """
    available = {k: v for k, v in deltas.items() if v is not None}
    shown = ", ".join(f"d{k}={v:+.3f}" for k, v in available.items())
    if not available:
        return Decision(False, "no audit objective available")
    improved = [k for k, v in available.items() if v >= eta - _EPS]
    regressed = [k for k, v in available.items() if v < -tau - _EPS]
    if regressed:
        return Decision(False, f"{', '.join(regressed)} regressed by more than tau={tau:g} ({shown})")
    if not improved:
        return Decision(False, f"no objective improved by eta={eta:g} ({shown})")
    return Decision(True, f"{', '.join(improved)} improved by >= eta={eta:g}, none regressed "
                          f"beyond tau={tau:g} ({shown})")


def score_coupled_accept(proxy_incumbent: float | None, proxy_candidate: float | None,
                         eta: float) -> Decision:
    """SC-CoEvo: accept G' iff the current solver scores >= eta higher under G' rubrics."""
    if proxy_incumbent is None or proxy_candidate is None:
        return Decision(False, "solver score under the rubrics could not be read")
    gain = proxy_candidate - proxy_incumbent
    accept = gain >= eta - _EPS
    return Decision(accept, f"solver aggregate score {proxy_candidate:.3f} vs {proxy_incumbent:.3f} "
                            f"(gain {gain:+.3f}) {'>=' if accept else '<'} eta={eta:g} (score-coupled)")


# ====================================================================== plumbing
class Meter:
    """Counts completions asked of a model and how many the run store's cache answered."""

    def __init__(self, inner: Any):
        self.inner, self.model_id = inner, inner.model_id
        # Passed on: without it every scoring role would think the backend has no logprobs.
        self.supports_logprobs = getattr(inner, "supports_logprobs", False)
        self.calls = self.cached = 0

    def generate(self, conversations, sampling, n=1):
        out = self.inner.generate(conversations, sampling, n)
        self.calls += sum(len(group) for group in out)
        self.cached += sum(bool(getattr(c, "cached", False)) for group in out for c in group)
        return out


def seeded(sampling: Sampling, seed: int) -> Sampling:
    # Greedy decoding does not depend on the seed: dropping it lets every seed share answers.
    return sampling.model_copy(update={"seed": seed if sampling.temperature > 0 else None})


@dataclass
class Roles:
    solver: Solver
    generator: RubricGenerator
    judge: CriterionJudge
    solver_rewriter: SolverRewriter
    structural: StructuralAuditor
    contrastive: ContrastiveAuditor
    generator_rewriter: GeneratorRewriter
    grader: Any  # GoldRubricJudge: final test and diagnostic grading only
    rollout_sampling: Sampling


def build_roles(config: DecoEvoConfig, model: Any, grader_model: Any, seed: int) -> Roles:
    from coevo.prompts import load_template
    from coevo.roles.judges import GoldRubricJudge

    sp = config.sampling
    spec = load_template(config.audit_spec).text.strip()
    chars = config.max_text_chars
    return Roles(
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
        grader=GoldRubricJudge(grader_model, seeded(sp.grader, seed)),
        rollout_sampling=seeded(sp.rollout, seed),
    )


def make_partitions(samples: list[Sample], config: Partitions) -> dict[str, list[Sample]]:
    """The seven disjoint partitions (seeded hash), each capped at `sizes` when given."""
    from coevo.tasks.partition import partition

    parts = partition(samples, config.fractions, config.seed)
    return {name: parts[name][: config.sizes[name]] if name in config.sizes else parts[name]
            for name in PARTITIONS}


def gold_scores(grader: Any, samples: list[Sample], responses: list[str]) -> list[tuple[float | None, Any]]:
    """Gold-rubric grade of each response, mapped from 1-10 to 0-1, with its Judgment."""
    judged = grader.judge(samples, responses) if samples else []
    return [(_unit(j.score) if j.valid else None, j) for j in judged]


def _unit(grade: float | None) -> float | None:
    """A 1-10 grade on the 0-1 scale."""
    return None if grade is None else (grade - 1) / 9


# ====================================================================== one method, one seed
class MethodRun:
    """The loop of one method under one seed; the incumbents S and G are its state."""

    def __init__(self, method: str, seed: int, config: DecoEvoConfig, parts: dict[str, list[Sample]],
                 roles: Roles, store: RunStore | None, meter: Meter):
        self.method, self.seed, self.config, self.roles = method, seed, config, roles
        self.store, self.meter = store, meter
        # Optimisation roles see questions without gold fields; the grader sees the samples.
        self.gold = parts
        self.parts = {name: [blind(s) for s in samples] for name, samples in parts.items()}
        self.history = SkillHistory(store, method, seed)
        self.solver_skill = self.history.initial(SOLVER, config.initial_solver_skill)
        self.generator_skill = self.history.initial(GENERATOR, config.initial_generator_skill)
        self.stall = 0
        self.since_outer = 0
        self.invalid: dict[str, int] = {}
        self.trajectory: list[dict[str, Any]] = []
        self.costs: list[dict[str, Any]] = []
        self.test_sampled: list[float | None] = []  # the grader's written grades, beside `test`'s
        self._rubrics: dict[tuple[str, str], GeneratedRubric] = {}

    @property
    def stage(self) -> str:
        return f"{self.method}/seed{self.seed}"

    # -- shared pieces ------------------------------------------------------------------
    def _count(self, what: str, n: int) -> None:
        if n:
            self.invalid[what] = self.invalid.get(what, 0) + n

    def rubrics(self, questions: list[Sample], skill: Skill) -> list[Rubric | None]:
        """G's rubric per question, generated once per (generator version, question)."""
        todo = [q for q in questions if (skill.text, q.id) not in self._rubrics]
        for q, generated in zip(todo, self.roles.generator.generate(todo, skill.text)):
            self._rubrics[(skill.text, q.id)] = generated
            self._count("rubric", int(not generated.valid))
        return [self._rubrics[(skill.text, q.id)].rubric for q in questions]

    def judge(self, questions: list[Sample], responses: list[str],
              rubrics: list[Rubric | None]) -> list[CriterionJudgment]:
        judged = self.roles.judge.judge(questions, responses, rubrics)
        self._count("judge", sum(1 for j, r in zip(judged, rubrics) if r is not None and not j.valid))
        return judged

    def solve(self, questions: list[Sample], skill: Skill) -> list[str]:
        return [group[0] for group in self.roles.solver.solve(questions, skill.text)]

    def _measure(self, kind: str, step: int, fn) -> Any:
        calls, cached, start = self.meter.calls, self.meter.cached, time.perf_counter()
        result = fn()
        cost = {"kind": kind, "step": step, "llm_calls": self.meter.calls - calls,
                "cached_calls": self.meter.cached - cached, "seconds": time.perf_counter() - start}
        self.costs.append(cost)  # also in the step result and summary["cost"]; not plotted
        if self.store is not None:  # written now, so a long run's costs are readable mid-way
            self.store.put_record("step_cost", f"{self.stage}/{kind}{step}", cost)
        return result

    def step_seed(self, step: int) -> int:
        # Depends on (seed, step) only: matched methods still share every identical call.
        return self.seed * 1000 + step

    # -- inner step: solver -------------------------------------------------------------
    def train_batch(self, step: int) -> list[Sample]:
        # Seeded by (seed, step) only, so matched methods see the same batch at each step.
        train = self.parts["train"]
        return random.Random(f"{self.seed}:{step}").sample(train, min(self.config.batch_size, len(train)))

    def inner_step(self, step: int) -> bool:
        """Solve, generate rubrics, judge, rewrite S, gate S'. Returns whether S' was accepted."""
        batch = self.train_batch(step)
        responses = self.solve(batch, self.solver_skill)
        rubrics = self.rubrics(batch, self.generator_skill)
        judged = self.judge(batch, responses, rubrics)
        if self.store is not None:
            self.store.log_metrics(self.stage, {"train_proxy": mean_of_known([j.score for j in judged])}, round=step)
        failures = pick_failures(batch, rubrics, judged, self.config.max_failures)
        if not failures:
            return self._stall(step, "no unmet criterion on the train batch: nothing to rewrite")
        rewrite = self.roles.solver_rewriter.rewrite(self.solver_skill.text, failures,
                                                     seed=self.step_seed(step))
        if not rewrite.valid:
            self._count("solver_rewrite", 1)
            return self._stall(step, f"solver rewriter output unreadable: {rewrite.error}")
        if rewrite.text.strip() == self.solver_skill.text.strip():
            return self._stall(step, "solver rewriter returned the incumbent unchanged")
        candidate = self.history.propose(self.solver_skill, rewrite.text)
        gate = self.parts["solver_gate"]
        gate_rubrics = self.rubrics(gate, self.generator_skill)  # same cached rubrics for both
        incumbent = self.judge(gate, self.solve(gate, self.solver_skill), gate_rubrics)
        challenger = self.judge(gate, self.solve(gate, candidate), gate_rubrics)
        decision = solver_gate([j.score for j in incumbent], [j.score for j in challenger], self.config.delta)
        decision.details.update(self._sampled_gate(incumbent, challenger))
        if self.store is not None:
            self.store.put_record("gate_judgment", f"{self.stage}/step{step}", {
                "step": step, "question_ids": [q.id for q in gate], "candidate_version": candidate.version,
                "incumbent": [j.record() for j in incumbent], "candidate": [j.record() for j in challenger]})
        decided = self.history.decide(candidate, self.solver_skill, decision.accept, decision.reason,
                                      step=step, diagnosis=rewrite.note, n_failures=len(failures),
                                      **decision.details)
        if decision.accept:
            self.solver_skill, self.stall = decided, 0
        else:
            self.stall += 1
        return decision.accept

    def _sampled_gate(self, incumbent: list[CriterionJudgment],
                      challenger: list[CriterionJudgment]) -> dict[str, Any]:
        """The same gate on the verdicts as written: what it would have said without expected
        scores (kept beside the decision, so the ties expectation removed can be counted)."""
        sampled = solver_gate([j.sampled for j in incumbent], [j.sampled for j in challenger], self.config.delta)
        return {"gate_incumbent_sampled": sampled.details.get("gate_incumbent"),
                "gate_candidate_sampled": sampled.details.get("gate_candidate"),
                "gate_tie_sampled": sampled.details.get("gate_tie")}

    def _stall(self, step: int, why: str) -> bool:
        self.stall += 1
        if self.store is not None:
            self.store.put_record("solver_stall", f"{self.stage}/step{step}", {"step": step, "why": why})
        return False

    # -- outer step: generator ----------------------------------------------------------
    def near_ties(self, questions: list[Sample], rubrics: list[Rubric | None]):
        """m rollouts per question, scored under `rubrics`; near-tie pairs and stage-1 verdicts.

        Returns (rollouts, judgments, [(q, i, j, gap, verdict)]) for non-equivalent,
        readable verdicts only.
        """
        m = self.config.m
        rollouts = self.roles.solver.solve(questions, self.solver_skill.text, n=m,
                                           sampling=self.roles.rollout_sampling)
        flat = [(q, i) for q in range(len(questions)) for i in range(m) if rubrics[q] is not None]
        judged_flat = self.judge([questions[q] for q, _ in flat], [rollouts[q][i] for q, i in flat],
                                 [rubrics[q] for q, _ in flat])
        judgments: list[list[CriterionJudgment | None]] = [[None] * m for _ in questions]
        for (q, i), j in zip(flat, judged_flat):
            judgments[q][i] = j
        scores = [[j.score if j is not None else None for j in row] for row in judgments]
        pairs = select_near_ties(scores, self.config.epsilon, self.config.max_pairs, rollouts)
        verdicts = self.roles.contrastive.blind_preferences(
            [questions[q] for q, *_ in pairs], [(rollouts[q][i], rollouts[q][j]) for q, i, j, _ in pairs])
        self._count("blind_preference", sum(not v.valid for v in verdicts))
        kept = [(q, i, j, gap, v) for (q, i, j, gap), v in zip(pairs, verdicts)
                if v.valid and v.preferred is not None]
        return rollouts, judgments, kept

    def contrastive_audit(self, questions: list[Sample], rubrics: list[Rubric | None]) -> list[ContrastiveRecord]:
        """Probe-side near-tie audit: blind stage, then the rubric stage; equivalents dropped."""
        rollouts, judgments, kept = self.near_ties(questions, rubrics)
        explanations = self.roles.contrastive.explain(
            [v for *_, v in kept],
            [breakdown_block(rubrics[q], judgments[q][i], judgments[q][j], v.shown_swapped)
             for q, i, j, _, v in kept],
            [(judgments[q][i].score, judgments[q][j].score) for q, i, j, _, v in kept])
        records = []
        for (q, i, j, gap, v), (why, principle) in zip(kept, explanations):
            plus, minus = (i, j) if v.preferred == 0 else (j, i)
            records.append(ContrastiveRecord(questions[q].id, questions[q].prompt, rollouts[q][plus],
                                               rollouts[q][minus], v.rationale, why, principle, gap))
        return records

    def outer_step(self, step: int) -> bool:
        """Audit G on probe, distil G', verify on the generator gate. Returns acceptance."""
        probe = self.parts["probe"]
        rubrics = self.rubrics(probe, self.generator_skill)
        structural = self.roles.structural.audit(probe, rubrics)
        self._count("structural_audit", sum(not a.valid for a in structural))
        contrastive = self.contrastive_audit(probe, rubrics)
        if self.store is not None:
            for i, record in enumerate(contrastive):
                self.store.put_record("contrastive_audit", f"{self.stage}/step{step}/{i}", record.__dict__)
        if self.store is not None:
            self.store.log_metrics(self.stage, {"probe_adequacy": mean_of_known([a.adequacy for a in structural]),
                                                "contrastive_records": float(len(contrastive))}, round=step)
        rewrite = self.roles.generator_rewriter.rewrite(self.generator_skill.text, structural, contrastive,
                                                        seed=self.step_seed(step))
        if not rewrite.valid or rewrite.text.strip() == self.generator_skill.text.strip():
            self._count("generator_rewrite", int(not rewrite.valid))
            if self.store is not None:
                why = (f"generator rewriter output unreadable: {rewrite.error}" if not rewrite.valid
                       else "generator rewriter returned the incumbent unchanged")
                self.store.put_record("generator_stall", f"{self.stage}/step{step}", {"step": step, "why": why})
            return False
        candidate = self.history.propose(self.generator_skill, rewrite.text)
        gate = self.parts["generator_gate"]
        decision = (self._score_coupled(gate, candidate) if self.method == "sc_coevo"
                    else self._decoupled(gate, candidate, step))
        decided = self.history.decide(candidate, self.generator_skill, decision.accept, decision.reason,
                                      step=step, analysis=rewrite.note, n_structural=len(structural),
                                      n_contrastive=len(contrastive), **decision.details)
        if decision.accept:
            self.generator_skill = decided
        return decision.accept

    def _decoupled(self, gate: list[Sample], candidate: Skill, step: int) -> Decision:
        """Structural adequacy and resolution rate on frozen records; the Pareto rule."""
        incumbent_rubrics = self.rubrics(gate, self.generator_skill)
        candidate_rubrics = self.rubrics(gate, candidate)
        a_inc = self.roles.structural.audit(gate, incumbent_rubrics)
        a_cand = self.roles.structural.audit(gate, candidate_rubrics)
        pairs = [(x.adequacy, y.adequacy) for x, y in zip(a_inc, a_cand) if x.valid and y.valid]
        self._count("structural_audit", sum(not a.valid for a in a_inc + a_cand))
        adequacy = ((sum(y for _, y in pairs) - sum(x for x, _ in pairs)) / len(pairs)) if pairs else None
        # Frozen blind-spot set: rollouts, near-tie pairs and blind preferences are fixed
        # once, so G and G' are scored on the same audited records.
        rollouts, _, kept = self.near_ties(gate, incumbent_rubrics)
        frozen = [(gate[q], rollouts[q][i if v.preferred == 0 else j], rollouts[q][j if v.preferred == 0 else i])
                  for q, i, j, _, v in kept]
        if self.store is not None:
            for n, (x, plus, minus) in enumerate(frozen):
                self.store.put_record("blind_spot", f"{self.stage}/step{step}/{n}",
                                      {"question_id": x.id, "y_plus": plus, "y_minus": minus})
        r_inc = self.resolution(frozen, incumbent_rubrics, gate)
        r_cand = self.resolution(frozen, candidate_rubrics, gate)
        deltas = {"structural": adequacy,
                  "resolution": None if r_inc is None or r_cand is None else r_cand - r_inc}
        decision = pareto_accept(deltas, self.config.eta, self.config.tau)
        written = [(x.sampled, y.sampled) for x, y in zip(a_inc, a_cand) if x.valid and y.valid]
        decision.details.update({
            "adequacy_incumbent": mean_of_known([x for x, _ in pairs]), "adequacy_candidate": mean_of_known([y for _, y in pairs]),
            "adequacy_incumbent_sampled": mean_of_known([x for x, _ in written]),
            "adequacy_candidate_sampled": mean_of_known([y for _, y in written]),
            "resolution_incumbent": r_inc, "resolution_candidate": r_cand, "n_frozen": len(frozen)})
        return decision

    def resolution(self, frozen: list[tuple[Sample, str, str]], rubrics: list[Rubric | None],
                   gate: list[Sample]) -> float | None:
        if not frozen:
            return None
        by_id = {q.id: r for q, r in zip(gate, rubrics)}
        questions = [x for x, _, _ in frozen for _ in (0, 1)]
        responses = [y for _, plus, minus in frozen for y in (plus, minus)]
        judged = self.judge(questions, responses, [by_id[x.id] for x in questions])
        margins = []
        for n, (x, _, _) in enumerate(frozen):
            plus, minus = judged[2 * n].score, judged[2 * n + 1].score
            margins.append((x.id, None if plus is None or minus is None else plus - minus))
        return resolution_rate(margins, self.config.gamma)

    def _score_coupled(self, gate: list[Sample], candidate: Skill) -> Decision:
        """SC-CoEvo's rule: the current solver's aggregate score under G' vs under G."""
        responses = self.solve(gate, self.solver_skill)
        inc = [j.score for j in self.judge(gate, responses, self.rubrics(gate, self.generator_skill))]
        cand = [j.score for j in self.judge(gate, responses, self.rubrics(gate, candidate))]
        paired = [(a, b) for a, b in zip(inc, cand) if a is not None and b is not None]
        proxy_inc = mean_of_known([a for a, _ in paired]) if paired else None
        proxy_cand = mean_of_known([b for _, b in paired]) if paired else None
        decision = score_coupled_accept(proxy_inc, proxy_cand, self.config.eta)
        decision.details.update({"proxy_incumbent": proxy_inc, "proxy_candidate": proxy_cand})
        return decision

    # -- evaluation ---------------------------------------------------------------------
    def diagnose(self, step: int) -> None:
        """Post-hoc trajectory point on the diagnostic set: proxy (generated rubrics) vs gold."""
        diag = self.parts["diagnostic"]
        if not diag:
            return
        responses = self.solve(diag, self.solver_skill)
        proxy = mean_of_known([j.score for j in self.judge(diag, responses, self.rubrics(diag, self.generator_skill))])
        graded = gold_scores(self.roles.grader, self.gold["diagnostic"], responses)
        self._count("grader", sum(1 for g, _ in graded if g is None))
        point = {"step": step, "proxy": proxy, "gold": mean_of_known([g for g, _ in graded])}
        self.trajectory.append(point)
        if self.store is not None:
            self.store.log_metrics(self.stage, {"diag_proxy": proxy, "diag_gold": point["gold"]}, round=step)

    def test(self) -> list[float | None]:
        """Final test answers with the final S, graded against gold rubrics (0-1)."""
        test = self.parts["test"]
        responses = self.solve(test, self.solver_skill)
        graded = gold_scores(self.roles.grader, self.gold["test"], responses)
        self._count("grader", sum(1 for g, _ in graded if g is None))
        if self.store is not None:
            for sample, response, (_, judgment) in zip(self.gold["test"], responses, graded):
                self.store.save_rollout("test", Rollout(sample_id=sample.id, x=sample.prompt, y0=response,
                                                        condition=self.stage,
                                                        judgments={"gold_rubric": judgment}))
        self.test_sampled = [None if g is None else _unit(j.sampled) for g, j in graded]
        return [g for g, _ in graded]

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """T inner steps (none for zero-shot), outer steps for the co-evolving methods, test."""
        optimise = self.method != "zero_shot"
        coevolve = self.method in ("sc_coevo", "decoevo")
        self.diagnose(0)
        for step in range(1, self.config.inner_steps + 1):
            if optimise:
                self._measure("inner", step, lambda: self.inner_step(step))
                self.since_outer += 1
                # An outer step after the last inner step could no longer shape the solver.
                if (coevolve and step < self.config.inner_steps
                        and outer_step_due(self.since_outer, self.stall, self.config.k, self.config.s)):
                    self._measure("outer", step, lambda: self.outer_step(step))
                    self.since_outer, self.stall = 0, 0
            self.diagnose(step)
        scores = self.test()
        return {"method": self.method, "seed": self.seed, "test_scores": scores,
                "test_ids": [s.id for s in self.parts["test"]], "test_mean": mean_of_known(scores),
                "test_scores_sampled": self.test_sampled, "test_mean_sampled": mean_of_known(self.test_sampled),
                "scoring": {"judge": self.roles.judge.scoring, "auditor": self.roles.structural.scoring,
                            "grader": getattr(self.roles.grader, "scoring", "sampled")},
                "solver": self.solver_skill.model_dump(), "rubric_generator": self.generator_skill.model_dump(),
                "trajectory": self.trajectory, "costs": self.costs, "invalid": self.invalid}


def pick_failures(questions: list[Sample], rubrics: list[Rubric | None],
                  judged: list[CriterionJudgment], limit: int) -> list[dict[str, str]]:
    """Unmet criteria with the judge's rationale, lowest-scoring questions first, taken
    round-robin across questions so one bad answer does not fill the rewriter's view."""
    order = sorted((j.score, n) for n, j in enumerate(judged) if j.valid and rubrics[n] is not None)
    per_question = []
    for _, n in order:
        unmet = [c for c in rubrics[n].criteria if not judged[n].satisfied.get(c.name)]
        unmet.sort(key=lambda c: -c.weight)
        per_question.append([{"question": questions[n].prompt, "criterion": c.description,
                               "rationale": judged[n].rationales.get(c.name, "")} for c in unmet])
    failures: list[dict[str, str]] = []
    while len(failures) < limit and any(per_question):
        for row in per_question:
            if row and len(failures) < limit:
                failures.append(row.pop(0))
    return failures


# ====================================================================== the experiment
def run_decoevo(config: DecoEvoConfig, store: RunStore) -> dict[str, Any]:
    """`coevo run` entry for `algorithm: decoevo`: every method under every seed, then test."""
    from coevo.llm.specs import load_model
    from coevo.tasks.loaders import load_data

    samples = load_data(config.data)
    parts = make_partitions(samples, config.partitions)
    for name in ("test", "diagnostic"):
        lacking = [s.id for s in parts[name] if s.rubric is None or not s.rubric.criteria]
        if lacking:
            raise DataError(f"{name} samples need gold rubrics for the final grader; {lacking[:3]} have "
                             "none. Map a rubric column (data.columns.rubric) or use bundled:writing")
    for name in ("train", "solver_gate", "test"):
        if not parts[name]:
            raise ConfigError(f"partition {name!r} is empty: add samples or raise partitions.fractions.{name}")
    store.set_meta("partitions", {name: [s.id for s in group] for name, group in parts.items()})
    meter = Meter(load_model(config.model, store=store, **config.model_options))
    grader = (Meter(load_model(config.grader_model, store=store, **config.model_options))
              if config.grader_model else meter)
    results: dict[str, dict[str, Any]] = {}
    jobs = [(seed, method) for seed in config.seeds for method in config.methods]
    with progress_bar("decoevo: method x seed", total=len(jobs)) as advance:
        for seed, method in jobs:
            key = f"{method}/seed{seed}"
            result = store.step_result(key)
            if result is None:  # finished (method, seed) runs are not repeated on --resume
                roles = build_roles(config, meter, grader, seed)
                result = MethodRun(method, seed, config, parts, roles, store, meter).run()
                store.finish_step(key, result)
            results[key] = result
            advance(1)

    records = history(store)
    export_markdown(records, store.run_dir)
    return summarise(config, results, records, store, {n: len(g) for n, g in parts.items()})


# ====================================================================== transfer
def evaluate_skill(skill: str, samples: list[Sample], model: Any, grader: Any | None = None,
                   sampling: DecoEvoSampling | None = None, seed: int = 0) -> dict[str, Any]:
    """Apply a final solver skill to other data, no updates; gold-rubric score (0-1)."""
    lacking = [s.id for s in samples if s.rubric is None or not s.rubric.criteria]
    if lacking:
        raise DataError(f"every sample needs a gold rubric to be graded; {lacking[:3]} have none")
    sampling = sampling or DecoEvoSampling()
    from coevo.roles.judges import GoldRubricJudge

    solver = Solver(model, seeded(sampling.solver, seed))
    responses = [group[0] for group in solver.solve([blind(s) for s in samples], skill)]
    graded = gold_scores(GoldRubricJudge(grader or model, seeded(sampling.grader, seed)), samples, responses)
    scores = [g for g, _ in graded]
    valid = [g for g in scores if g is not None]
    return {"n_samples": len(samples), "n_valid": len(valid), "n_invalid": len(scores) - len(valid),
            "gold_mean": sum(valid) / len(valid) if valid else None,
            "scores": {s.id: g for s, g in zip(samples, scores)}}
