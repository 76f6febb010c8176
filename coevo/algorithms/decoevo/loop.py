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

Methods, same budgets (inner steps) and splits, one loop (`MethodRun`); a method is only
a `MethodPolicy`: which skills it evolves and the acceptance rule of each (METHOD_POLICIES):
  zero_shot  no optimisation (the initial S),
  skillopt   inner steps only, G fixed (solver gate),
  sc_coevo   DecoEvo with one change: G' is accepted when the current solver's aggregate
             score under G' rubrics beats the score under G rubrics by eta (score-coupled),
  decoevo    the method above (solver gate; Pareto rule on the audits).
Candidates are made by per-skill proposers (PROPOSERS), the same for every method. Before
any rule, a candidate that is no longer a skill (too short to instruct, or no sentence that
instructs: rules.skill_form, `skill_form:`) is refused, for every method alike; the paper
names no such check (its rewriters are asked for skills, and its backbones write them).
Final evaluation: test answers with the final S, graded against gold rubrics by a separate
grader role (the benchmark's own, as in the paper; unset, the backbone grades: a listed
departure and a run warning); mean +- sd over seeds and the 95% CI of DecoEvo - SkillOpt
over matched runs (the paper's), beside a pooled one over (seed, question) pairs.
The paper's settings, departures and `coevo plan`: paper.py. The judge audit (not in
the paper): on the initial skills and after every outer step, the grading under the current G
is probed for gaming; `audit.gate` refuses a flagged G' (audit.py).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from coevo.algorithms.decoevo import audit as decoevo_audit
from coevo.algorithms.decoevo.config import DecoEvoConfig
from coevo.algorithms.decoevo.data import _unit, check_partitions, gold_scores, make_partitions
from coevo.algorithms.decoevo.backbone import BackboneRoles, Meter, build_decoevo_roles
from coevo.algorithms.decoevo.rules import (
    Decision,
    outer_step_due,
    pareto_accept,
    resolution_rate,
    score_coupled_accept,
    select_near_ties,
    skill_form,
    solver_gate,
)
from coevo.algorithms.decoevo.summary import (
    DecoEvoSummary,
    MethodResult,
    ScoringModes,
    StepCost,
    TrajectoryPoint,
    summarise,
)
from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER, SkillHistory, export_markdown, versions
from coevo.eval.constraints import CONSTRAINTS, constraint_judgment, constraints_of, passed
from coevo.eval.stats import mean_of_known
from coevo.llm.call_tags import tagged
from coevo.llm.python_functions import PythonFunction
from coevo.monitor.rounds import RoundMonitor
from coevo.core.progress import progress_bar
from coevo.roles.decoevo import (
    ContrastiveRecord,
    CriterionJudgment,
    GeneratedRubric,
    blind,
    breakdown_block,
)
from coevo.rundir.store import RunStore
from coevo.core.types import Rollout, Rubric, Sample, Skill

log = logging.getLogger(__name__)


# ====================================================================== methods as policies
#: The loop's state: skill name -> the incumbent's text (GEPA's candidate), e.g.
#: {"solver": S, "rubric_generator": G}.
SkillSet = dict[str, str]


class AcceptancePolicy(Protocol):
    """Decides whether a candidate version of one skill replaces the incumbent.

    `loop.skills` holds the incumbents (the candidate's own skill included); `candidate` is
    the proposed version, `candidate.name` the skill it would replace. Measurements worth
    keeping go in `Decision.details`: they are recorded with the skill version.
    """

    def accept(self, loop: MethodRun, candidate: Skill, step: int) -> Decision:
        """The decision on `candidate`, proposed at inner step `step`."""


class SolverGatePolicy:
    """SkillOpt's and DecoEvo's solver rule: S' must beat S by delta on the solver gate,
    paired on the same questions and the same cached rubrics of the incumbent G (each
    question scored by the mean of its `gate_samples` answers' judgments)."""

    def accept(self, loop: MethodRun, candidate: Skill, step: int) -> Decision:
        """Judge S's and S''s gate answers under G's rubrics; `solver_gate` decides."""
        gate = loop.parts["solver_gate"]
        rubrics = loop.rubrics(gate, loop.skills[GENERATOR])  # the same cached rubrics for both
        incumbent = loop.gate_judgments(gate, loop.skills[candidate.name], rubrics)
        challenger = loop.gate_judgments(gate, candidate.text, rubrics)
        decision = solver_gate(question_means(incumbent), question_means(challenger), loop.config.delta)
        decision.details.update(self.sampled_gate(incumbent, challenger, loop.config.delta))
        loop.record("gate_judgment", f"step{step}", {
            "step": step, "question_ids": [q.id for q in gate], "candidate_version": candidate.version,
            "samples": loop.config.gate_samples,  # judgments per question, question after question
            "incumbent": [j.record() for row in incumbent for j in row],
            "candidate": [j.record() for row in challenger for j in row]})
        return decision

    @staticmethod
    def sampled_gate(incumbent: list[list[CriterionJudgment]], challenger: list[list[CriterionJudgment]],
                     delta: float) -> dict[str, Any]:
        """The same gate on the verdicts as written: what it would have said without expected
        scores (kept beside the decision, so the ties expectation removed can be counted)."""
        sampled = solver_gate(question_means(incumbent, "sampled"), question_means(challenger, "sampled"), delta)
        return {"gate_incumbent_sampled": sampled.details.get("gate_incumbent"),
                "gate_candidate_sampled": sampled.details.get("gate_candidate"),
                "gate_tie_sampled": sampled.details.get("gate_tie")}


def question_means(rows: list[list[CriterionJudgment]], kind: str = "score") -> list[float | None]:
    """Per question, the mean `kind` ("score" or "sampled") of its readable judgments (None: none)."""
    return [mean_of_known([getattr(j, kind) for j in row]) for row in rows]


class ScoreCoupledPolicy:
    """SC-CoEvo's generator rule: the current solver's aggregate score on the generator gate
    under G' rubrics vs under G rubrics must rise by eta (the coupling DecoEvo removes)."""

    def accept(self, loop: MethodRun, candidate: Skill, step: int) -> Decision:
        """Score the incumbent solver's gate answers under both rubric sets, paired."""
        gate = loop.parts["generator_gate"]
        responses = loop.solve(gate, loop.skills[SOLVER])
        inc = [j.score for j in loop.judge(gate, responses, loop.rubrics(gate, loop.skills[candidate.name]))]
        cand = [j.score for j in loop.judge(gate, responses, loop.rubrics(gate, candidate.text))]
        paired = [(a, b) for a, b in zip(inc, cand) if a is not None and b is not None]
        proxy_inc = mean_of_known([a for a, _ in paired]) if paired else None
        proxy_cand = mean_of_known([b for _, b in paired]) if paired else None
        decision = score_coupled_accept(proxy_inc, proxy_cand, loop.config.eta)
        decision.details.update({"proxy_incumbent": proxy_inc, "proxy_candidate": proxy_cand})
        return decision


class DecoupledAuditPolicy:
    """DecoEvo's generator rule: structural adequacy A and resolution rate R on the generator
    gate, on frozen records, and the Pareto rule. The solver's aggregate score never enters."""

    def accept(self, loop: MethodRun, candidate: Skill, step: int) -> Decision:
        """dA over audited gate questions, dR over one frozen near-tie set; `pareto_accept`."""
        gate = loop.parts["generator_gate"]
        incumbent_rubrics = loop.rubrics(gate, loop.skills[candidate.name])
        candidate_rubrics = loop.rubrics(gate, candidate.text)
        adequacy = self.adequacy(loop, gate, incumbent_rubrics, candidate_rubrics)
        frozen = self.frozen_records(loop, gate, incumbent_rubrics, step)
        r_inc = self.resolution(loop, frozen, incumbent_rubrics, gate)
        r_cand = self.resolution(loop, frozen, candidate_rubrics, gate)
        deltas = {"structural": adequacy["delta"],
                  "resolution": None if r_inc is None or r_cand is None else r_cand - r_inc}
        decision = pareto_accept(deltas, loop.config.eta, loop.config.tau)
        decision.details.update({key: adequacy[key] for key in (
            "adequacy_incumbent", "adequacy_candidate", "adequacy_incumbent_sampled", "adequacy_candidate_sampled")})
        decision.details.update({"resolution_incumbent": r_inc, "resolution_candidate": r_cand,
                                 "n_frozen": len(frozen)})
        return decision

    @staticmethod
    def adequacy(loop: MethodRun, gate: list[Sample], incumbent_rubrics: list[Rubric | None],
                 candidate_rubrics: list[Rubric | None]) -> dict[str, float | None]:
        """Structural adequacy of both rubric sets on the questions audited readably for both:
        the mean change (`delta`, None when none was) and each side's mean, also as written."""
        a_inc = loop.roles.structural.audit(gate, incumbent_rubrics)
        a_cand = loop.roles.structural.audit(gate, candidate_rubrics)
        loop.count_invalid("structural_audit", sum(not a.valid for a in a_inc + a_cand))
        both = [(x, y) for x, y in zip(a_inc, a_cand) if x.valid and y.valid]
        pairs = [(x.adequacy, y.adequacy) for x, y in both]
        written = [(x.sampled, y.sampled) for x, y in both]
        return {"delta": ((sum(y for _, y in pairs) - sum(x for x, _ in pairs)) / len(pairs)) if pairs else None,
                "adequacy_incumbent": mean_of_known([x for x, _ in pairs]),
                "adequacy_candidate": mean_of_known([y for _, y in pairs]),
                "adequacy_incumbent_sampled": mean_of_known([x for x, _ in written]),
                "adequacy_candidate_sampled": mean_of_known([y for _, y in written])}

    @staticmethod
    def frozen_records(loop: MethodRun, gate: list[Sample], rubrics: list[Rubric | None],
                       step: int) -> list[tuple[Sample, str, str]]:
        """(question, y+, y-) of the gate's near-ties, by the blind preference.

        Frozen once, under the incumbent's rubrics: rollouts, pairs and blind preferences
        are then the same audited records for G and G'.
        """
        rollouts, _, kept = loop.near_ties(gate, rubrics)
        frozen = [(gate[q], rollouts[q][i if v.preferred == 0 else j], rollouts[q][j if v.preferred == 0 else i])
                  for q, i, j, _, v in kept]
        for n, (x, plus, minus) in enumerate(frozen):
            loop.record("blind_spot", f"step{step}/{n}", {"question_id": x.id, "y_plus": plus, "y_minus": minus})
        return frozen

    @staticmethod
    def resolution(loop: MethodRun, frozen: list[tuple[Sample, str, str]], rubrics: list[Rubric | None],
                   gate: list[Sample]) -> float | None:
        """Resolution rate of `rubrics` on the frozen records (None: no record)."""
        if not frozen:
            return None
        by_id = {q.id: r for q, r in zip(gate, rubrics)}
        questions = [x for x, _, _ in frozen for _ in (0, 1)]
        responses = [y for _, plus, minus in frozen for y in (plus, minus)]
        judged = loop.judge(questions, responses, [by_id[x.id] for x in questions])
        margins = []
        for n, (x, _, _) in enumerate(frozen):
            plus, minus = judged[2 * n].score, judged[2 * n + 1].score
            margins.append((x.id, None if plus is None or minus is None else plus - minus))
        return resolution_rate(margins, loop.config.gamma)


@dataclass(frozen=True)
class MethodPolicy:
    """What a method evolves and how it accepts: per skill name, its acceptance policy.

    `inner` skills are proposed and decided every inner step; `outer` skills only when
    `outer_step_due` (every k steps or after s stalls of the inner skills). A skill named in
    neither stays at its initial text. The loop is the same for every method.
    """

    inner: dict[str, AcceptancePolicy] = field(default_factory=dict)
    outer: dict[str, AcceptancePolicy] = field(default_factory=dict)


#: The paper's four methods differ only here. A user's method is one more MethodPolicy.
METHOD_POLICIES: dict[str, MethodPolicy] = {
    "zero_shot": MethodPolicy(),
    "skillopt": MethodPolicy(inner={SOLVER: SolverGatePolicy()}),
    "sc_coevo": MethodPolicy(inner={SOLVER: SolverGatePolicy()}, outer={GENERATOR: ScoreCoupledPolicy()}),
    "decoevo": MethodPolicy(inner={SOLVER: SolverGatePolicy()}, outer={GENERATOR: DecoupledAuditPolicy()}),
}


# ====================================================================== proposers
@dataclass
class SkillCandidate:
    """A rewriter's candidate text for one skill, with notes recorded beside its version."""

    text: str
    notes: dict[str, Any] = field(default_factory=dict)


#: Proposes a candidate for one skill from the loop's state, or None (a stall, recorded by
#: the proposer). Shared by every method that evolves the skill: SC-CoEvo and DecoEvo
#: propose generators the same way and differ only in acceptance.
Proposer = Callable[["MethodRun", int], "SkillCandidate | None"]


def propose_solver(loop: MethodRun, step: int) -> SkillCandidate | None:
    """Inner step: solve a train batch, rubric it with G, judge; the unmet criteria go to
    the solver-skill rewriter, whose rewrite of S is the candidate."""
    batch = loop.train_batch(step)
    responses = loop.solve(batch, loop.skills[SOLVER])
    rubrics = loop.rubrics(batch, loop.skills[GENERATOR])
    judged = loop.judge(batch, responses, rubrics)
    loop.log_metrics({"train_proxy": mean_of_known([j.score for j in judged])}, step)
    failures = pick_failures(batch, rubrics, judged, loop.config.max_failures)
    why = "no unmet criterion on the train batch: nothing to rewrite"
    if failures:
        rewrite = loop.roles.solver_rewriter.rewrite(loop.skills[SOLVER], failures, seed=loop.step_seed(step))
        if rewrite.valid and rewrite.text.strip() != loop.skills[SOLVER].strip():
            return SkillCandidate(rewrite.text, {"diagnosis": rewrite.note, "n_failures": len(failures)})
        loop.count_invalid("solver_rewrite", int(not rewrite.valid))
        why = (f"solver rewriter output unreadable: {rewrite.error}" if not rewrite.valid
               else "solver rewriter returned the incumbent unchanged")
    loop.record("solver_stall", f"step{step}", {"step": step, "why": why})
    return None


def propose_generator(loop: MethodRun, step: int) -> SkillCandidate | None:
    """Outer step, audit and distil: structural and near-tie contrastive audits of G on the
    probe set; the generator-skill rewriter turns both record sets into the candidate."""
    probe = loop.parts["probe"]
    rubrics = loop.rubrics(probe, loop.skills[GENERATOR])
    structural = loop.roles.structural.audit(probe, rubrics)
    loop.count_invalid("structural_audit", sum(not a.valid for a in structural))
    contrastive = loop.contrastive_audit(probe, rubrics)
    for i, record in enumerate(contrastive):
        loop.record("contrastive_audit", f"step{step}/{i}", record.__dict__)
    loop.log_metrics({"probe_adequacy": mean_of_known([a.adequacy for a in structural]),
                      "contrastive_records": float(len(contrastive))}, step)
    rewrite = loop.roles.generator_rewriter.rewrite(loop.skills[GENERATOR], structural, contrastive,
                                                    seed=loop.step_seed(step))
    if rewrite.valid and rewrite.text.strip() != loop.skills[GENERATOR].strip():
        return SkillCandidate(rewrite.text, {"analysis": rewrite.note, "n_structural": len(structural),
                                       "n_contrastive": len(contrastive)})
    loop.count_invalid("generator_rewrite", int(not rewrite.valid))
    why = (f"generator rewriter output unreadable: {rewrite.error}" if not rewrite.valid
           else "generator rewriter returned the incumbent unchanged")
    loop.record("generator_stall", f"step{step}", {"step": step, "why": why})
    return None


PROPOSERS: dict[str, Proposer] = {SOLVER: propose_solver, GENERATOR: propose_generator}


# ====================================================================== one method, one seed
class MethodRun:
    """The one loop, for one method under one seed; the incumbent skills are its state.

    Every method runs this loop; `policy` (by default `METHOD_POLICIES[method]`) says which
    skills it evolves and how it accepts their candidates, `proposers` how candidates are
    made, `initial_skills` where each skill starts (default: the config's S and G).
    """

    def __init__(self, method: str, seed: int, config: DecoEvoConfig, parts: dict[str, list[Sample]],
                 roles: BackboneRoles, store: RunStore | None, meter: Meter, *,
                 policy: MethodPolicy | None = None, proposers: dict[str, Proposer] | None = None,
                 initial_skills: SkillSet | None = None):
        self.method, self.seed, self.config, self.roles = method, seed, config, roles
        self.store, self.meter = store, meter
        self.policy = policy if policy is not None else METHOD_POLICIES[method]
        self.proposers = {**PROPOSERS, **(proposers or {})}
        # Optimisation roles see questions without gold fields; the grader sees the samples.
        self.gold = parts
        self.parts = {name: [blind(s) for s in samples] for name, samples in parts.items()}
        self.history = SkillHistory(store, method, seed)
        initial = initial_skills or {SOLVER: config.initial_solver_skill,
                                     GENERATOR: config.initial_generator_skill}
        self.incumbents: dict[str, Skill] = {name: self.history.initial(name, text)
                                             for name, text in initial.items()}
        self.stall = 0        # consecutive inner steps without an accepted candidate
        self.since_outer = 0  # inner steps since the last outer step
        self.invalid: dict[str, int] = {}
        self.trajectory: list[TrajectoryPoint] = []
        self.costs: list[StepCost] = []
        self.test_sampled: list[float | None] = []  # the grader's written grades, beside `test`'s
        self.test_constraints: list[list[bool]] = []  # per constrained test answer, each check's outcome
        self._rubrics: dict[tuple[str, str], GeneratedRubric] = {}
        # The judge audit (audit.py): G0 for the drift, the gate's records of the
        # round (saved with its audit) and refusals, the diagnostic answers and gold grades
        # of the step, by (solver skill text, question id), for the audit to reuse.
        self.initial_generator = self.skills.get(GENERATOR, "")
        self.gate_records: list[dict[str, Any]] = []
        self.gate_rejected = 0
        self._held_out: dict[tuple[str, str], tuple[str, float | None]] = {}
        #: The reward-hacking monitor, per inner step on the diagnostic questions (docs/monitor.md).
        self.monitor = (RoundMonitor(store, f"{method}/seed{seed}", config.monitor.anchors)
                        if store is not None and config.monitor.enabled else None)

    @property
    def stage(self) -> str:
        """"<method>/seed<k>": the prefix of this run's records and metrics in the store."""
        return f"{self.method}/seed{self.seed}"

    @property
    def skills(self) -> SkillSet:
        """The incumbent skill texts by name: the loop's state."""
        return {name: skill.text for name, skill in self.incumbents.items()}

    @property
    def solver_skill(self) -> Skill:
        """The incumbent solver skill S (its version record)."""
        return self.incumbents[SOLVER]

    @property
    def generator_skill(self) -> Skill:
        """The incumbent rubric-generator skill G (its version record)."""
        return self.incumbents[GENERATOR]

    # -- shared pieces ------------------------------------------------------------------
    def count_invalid(self, what: str, n: int) -> None:
        """Count `n` unreadable outputs of role `what` (reported, never raised)."""
        if n:
            self.invalid[what] = self.invalid.get(what, 0) + n

    def record(self, kind: str, suffix: str, value: Any) -> None:
        """Write a record under "<stage>/<suffix>" when the run has a store."""
        if self.store is not None:
            self.store.put_record(kind, f"{self.stage}/{suffix}", value)

    def log_metrics(self, metrics: dict[str, float | None], step: int) -> None:
        """Log metrics of this run's stage at `step` when the run has a store."""
        if self.store is not None:
            self.store.log_metrics(self.stage, metrics, round=step)

    def rubrics(self, questions: list[Sample], generator_skill: str) -> list[Rubric | None]:
        """The generator skill's rubric per question, generated once per (skill text, question)."""
        todo = [q for q in questions if (generator_skill, q.id) not in self._rubrics]
        for q, generated in zip(todo, self.roles.generator.generate(todo, generator_skill)):
            self._rubrics[(generator_skill, q.id)] = generated
            self.count_invalid("rubric", int(not generated.valid))
        return [self._rubrics[(generator_skill, q.id)].rubric for q in questions]

    def judge(self, questions: list[Sample], responses: list[str],
              rubrics: list[Rubric | None]) -> list[CriterionJudgment]:
        """Criterion-level judgments of the responses (unreadable ones counted)."""
        judged = self.roles.judge.judge(questions, responses, rubrics)
        self.count_invalid("judge", sum(1 for j, r in zip(judged, rubrics) if r is not None and not j.valid))
        return judged

    def solve(self, questions: list[Sample], solver_skill: str) -> list[str]:
        """One answer per question with the solver skill text `solver_skill`."""
        return [group[0] for group in self.roles.solver.solve(questions, solver_skill)]

    def gate_judgments(self, questions: list[Sample], solver_skill: str,
                       rubrics: list[Rubric | None]) -> list[list[CriterionJudgment]]:
        """Per question, `gate_samples` answers under `solver_skill`, each judged under the
        question's rubric. The first answer is `solve`'s (the same cached call)."""
        n = self.config.gate_samples
        answers = self.roles.solver.solve(questions, solver_skill, n=n)
        judged = self.judge([q for q in questions for _ in range(n)], [a for group in answers for a in group[:n]],
                            [r for r in rubrics for _ in range(n)])
        return [judged[i * n:(i + 1) * n] for i in range(len(questions))]

    def _measure(self, kind: str, step: int, fn: Callable[[], Any]) -> Any:
        calls, cached, start = self.meter.calls, self.meter.cached, time.perf_counter()
        result = fn()
        cost = StepCost(kind=kind, step=step, llm_calls=self.meter.calls - calls,
                        cached_calls=self.meter.cached - cached, seconds=time.perf_counter() - start)
        self.costs.append(cost)  # also in the step result and summary["step_cost"]; not plotted
        self.record("step_cost", f"{kind}{step}", cost.model_dump())  # now: readable mid-way
        return result

    def step_seed(self, step: int) -> int:
        """The rewriters' seed at `step`."""
        # Depends on (seed, step) only: matched methods still share every identical call.
        return self.seed * 1000 + step

    def train_batch(self, step: int) -> list[Sample]:
        """The train questions of inner step `step`."""
        # Seeded by (seed, step) only, so matched methods see the same batch at each step.
        train = self.parts["train"]
        return random.Random(f"{self.seed}:{step}").sample(train, min(self.config.batch_size, len(train)))

    # -- one skill, one step: propose, accept or keep -----------------------------------
    def evolve(self, name: str, policy: AcceptancePolicy, step: int) -> bool:
        """Propose a candidate for skill `name`, let `policy` decide, record the version.

        Returns whether the candidate replaced the incumbent (False on a stall too).
        """
        proposal = self.proposers[name](self, step)
        if proposal is None:
            return False
        incumbent = self.incumbents[name]
        candidate = self.history.propose(incumbent, proposal.text)
        # A rewrite that is no longer a skill is refused before its rule spends a gate call.
        form = skill_form(candidate.text, self.config.skill_form.min_words) if self.config.skill_form.enabled else None
        decision = form if form is not None else policy.accept(self, candidate, step)
        if decision.accept and name == GENERATOR and self.config.audit.gate:
            decision = decoevo_audit.gate(self, candidate.text, candidate.version, decision, step)
        decided = self.history.decide(candidate, incumbent, decision.accept, decision.reason, step=step,
                                      **proposal.notes, **decision.details)
        if decision.accept:
            self.incumbents[name] = decided
        return decision.accept

    def inner_step(self, step: int) -> bool:
        """Evolve every inner skill (S); the stall counter grows unless one was accepted."""
        # A list, not a generator: every inner skill gets its step even after an acceptance.
        accepted = any([self.evolve(name, policy, step) for name, policy in self.policy.inner.items()])
        self.stall = 0 if accepted else self.stall + 1
        return accepted

    def outer_step(self, step: int) -> bool:
        """Evolve every outer skill (G): audit, distil, verify. Resets both triggers."""
        accepted = any([self.evolve(name, policy, step) for name, policy in self.policy.outer.items()])
        self.since_outer, self.stall = 0, 0
        return accepted

    # -- the contrastive audit, shared by the generator's proposer and DecoEvo's rule ------
    def near_ties(self, questions: list[Sample], rubrics: list[Rubric | None]):
        """m rollouts per question, scored under `rubrics`; near-tie pairs and stage-1 verdicts.

        Returns (rollouts, judgments, [(q, i, j, gap, verdict)]) for non-equivalent,
        readable verdicts only.
        """
        m = self.config.m
        rollouts = self.roles.solver.solve(questions, self.skills[SOLVER], n=m,
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
        self.count_invalid("blind_preference", sum(not v.valid for v in verdicts))
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

    # -- evaluation ---------------------------------------------------------------------
    def diagnose(self, step: int) -> None:
        """Post-hoc trajectory point on the diagnostic set: proxy (generated rubrics) vs gold."""
        diag = self.parts["diagnostic"]
        if not diag:
            return
        responses = self.solve(diag, self.skills[SOLVER])
        judged = self.judge(diag, responses, self.rubrics(diag, self.skills[GENERATOR]))
        proxy = mean_of_known([j.score for j in judged])
        graded = gold_scores(self.roles.grader, self.gold["diagnostic"], responses)
        if self.monitor is not None:  # the proxy the skills are accepted on, against the gold
            self.monitor.observe(step, rewards=[j.score for j in judged if j.score is not None], outputs=responses,
                                 gold={q.id: g for q, (g, _) in zip(diag, graded)})
        self.count_invalid("grader", sum(1 for g, _ in graded if g is None))
        self._held_out = {(self.skills[SOLVER], q.id): (r, g) for q, r, (g, _) in zip(diag, responses, graded)}
        point = TrajectoryPoint(step=step, proxy=proxy, gold=mean_of_known([g for g, _ in graded]))
        self.trajectory.append(point)
        self.log_metrics({"diag_proxy": proxy, "diag_gold": point.gold}, step)

    def held_out_answers(self, questions: list[Sample]) -> list[str]:
        """The current solver's answers to held-out questions: the step's diagnostic ones
        where written, the rest written now."""
        skill = self.skills[SOLVER]
        todo = [q for q in questions if (skill, q.id) not in self._held_out]
        for q, response in zip(todo, self.solve(todo, skill)):
            self._held_out[(skill, q.id)] = (response, None)
        return [self._held_out[(skill, q.id)][0] for q in questions]

    def held_out_gold(self, samples: list[Sample], responses: list[str]) -> list[float | None]:
        """Gold-rubric grades (0-1) of `held_out_answers`: the diagnostic evaluation's where
        it graded them, the rest graded now (not counted among the run's grader outputs)."""
        skill = self.skills[SOLVER]
        found = [self._held_out.get((skill, s.id), ("", None)) for s in samples]
        todo = [n for n, ((answer, grade), r) in enumerate(zip(found, responses)) if grade is None or answer != r]
        graded = gold_scores(self.roles.grader, [samples[n] for n in todo], [responses[n] for n in todo])
        grades = [grade for _, grade in found]
        for n, (grade, _) in zip(todo, graded):
            grades[n] = grade
        return grades

    def test(self) -> list[float | None]:
        """Final test answers with the final S, graded against gold rubrics (0-1)."""
        test = self.parts["test"]
        with tagged(stage="test"):  # the stage its rollouts are saved under
            responses = self.solve(test, self.skills[SOLVER])
            graded = gold_scores(self.roles.grader, self.gold["test"], responses)
        self.count_invalid("grader", sum(1 for g, _ in graded if g is None))
        # The checkable gold beside the grader's: each answer against its prompt's constraints.
        checks = [constraint_judgment(response, constraints_of(sample)) if constraints_of(sample) else None
                  for sample, response in zip(self.gold["test"], responses)]
        self.test_constraints = [passed(c) for c in checks if c is not None]
        if self.store is not None:
            for sample, response, (_, judgment), check in zip(self.gold["test"], responses, graded, checks):
                judgments = {"gold_rubric": judgment} | ({CONSTRAINTS: check} if check is not None else {})
                self.store.save_rollout("test", Rollout(sample_id=sample.id, x=sample.prompt, y0=response,
                                                        condition=self.stage, judgments=judgments))
        self.test_sampled = [None if g is None else _unit(j.sampled) for g, j in graded]
        return [g for g, _ in graded]

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> MethodResult:
        """T inner steps (none without inner skills), outer steps when due, then test."""
        last = self.config.inner_steps
        self.diagnose(0)
        decoevo_audit.audit_round(self, 0)  # the grading under the initial G, and S's answers
        for step in range(1, last + 1):
            if self.policy.inner:
                self._measure("inner", step, lambda: self.inner_step(step))
            self.since_outer += 1
            # An outer step after the last inner step could no longer shape the inner skills.
            outer = (bool(self.policy.outer) and step < last
                     and outer_step_due(self.since_outer, self.stall, self.config.k, self.config.s))
            if outer:
                self._measure("outer", step, lambda: self.outer_step(step))
            self.diagnose(step)
            # G changes only in an outer step: one audit per outer step, after it (its gate's
            # records, if any, are kept with it).
            if outer or self.gate_records:
                decoevo_audit.audit_round(self, step)
        scores = self.test()
        return MethodResult(
            method=self.method, seed=self.seed, test_scores=scores, test_ids=[s.id for s in self.parts["test"]],
            test_mean=mean_of_known(scores), test_scores_sampled=self.test_sampled,
            test_mean_sampled=mean_of_known(self.test_sampled),
            scoring=ScoringModes(judge=self.roles.judge.scoring, auditor=self.roles.structural.scoring,
                                 grader=getattr(self.roles.grader, "scoring", "sampled")),
            solver=self.solver_skill, rubric_generator=self.generator_skill,
            trajectory=self.trajectory, costs=self.costs, invalid=self.invalid,
            constraint_outcomes=self.test_constraints)


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
def run_decoevo(config: DecoEvoConfig, store: RunStore) -> DecoEvoSummary:
    """`coevo run` entry for `algorithm: decoevo`: every method under every seed, then test."""
    from coevo.roles.query_filter import load_data

    parts = make_partitions(load_data(config.data), config.partitions)
    check_partitions(parts)
    store.set_meta("partitions", {name: [s.id for s in group] for name, group in parts.items()})
    meter = Meter(config.roles.load("backbone", store=store))
    grader = config.roles.load("grader", store=store) if config.roles.grader.model else meter
    if not isinstance(grader, (Meter, PythonFunction)):  # a Python grader caches its own calls, uncounted
        grader = Meter(grader)
    warn(store, grader_warnings(config))
    results: dict[str, MethodResult] = {}
    jobs = [(seed, method) for seed in config.seeds for method in config.methods]
    with progress_bar("decoevo: method x seed", total=len(jobs)) as advance:
        for seed, method in jobs:
            key = f"{method}/seed{seed}"
            saved = store.step_result(key)
            if saved is None:  # finished (method, seed) runs are not repeated on --resume
                roles = build_decoevo_roles(config, meter, grader, seed)
                result = MethodRun(method, seed, config, parts, roles, store, meter).run()
                store.finish_step(key, result.model_dump())
            else:
                result = MethodResult.model_validate(saved)
            results[key] = result
            advance(1)

    records = versions(store)
    export_markdown(records, store.run_dir)
    return summarise(config, results, records, store, {n: len(g) for n, g in parts.items()})


def grades_itself(config: DecoEvoConfig) -> bool:
    """Whether the backbone grades its own answers: `roles.grader.model` unset, or the same model
    on any engine (`hf:Qwen/Qwen3-8B` grading for `vllm:Qwen/Qwen3-8B` is still the backbone)."""
    from coevo.settings.departures import model_id

    grader = config.roles.grader.model
    return grader is None or model_id(grader) == model_id(config.roles.backbone.model)


def grader_warnings(config: DecoEvoConfig) -> list[str]:
    """The run warning of a grader that is the backbone (also a listed departure)."""
    if not grades_itself(config):
        return []
    how = ("roles.grader.model is unset" if config.roles.grader.model is None
           else "roles.grader.model is the backbone's model")
    return [f"{how}: the backbone ({config.roles.backbone.model}) grades its own test answers against the gold "
            "rubrics; the paper scores them with each benchmark's official grader, separate from the "
            "training judge. Set roles.grader.model to that grader (e.g. WritingBench's critic model)"]


def warn(store: RunStore, warnings: list[str]) -> None:
    """Say it on the console and keep it for the report (once, however often the run resumes)."""
    if not warnings:
        return
    for warning in warnings:
        log.warning(warning)
    store.update_meta("warnings", lambda old: [*old, *(w for w in warnings if w not in old)], [])
