"""The judge audit of a DecoEvo run (`audit:` in the config, coevo/audit/).

DecoEvo's trained evaluator is a document, the rubric-generator skill G: the frozen
criterion judge grades an answer against the rubric G writes for its question. That
grading (judge + G) is audited as a `gold_rubric` judge named `grader` (metrics
`audit_grader_*`): content-free answers (":", an empty answer, a copy of the question, ...)
go in the answer slot, against an answer the current solver skill S wrote.

- When: on the initial skills (round 0, before the first inner step) and after every outer
  step (the only place G can change), once per step, not per candidate. A round is the
  inner step (`<method>/seed<k>/round<t>`, the run page's convention).
- On what: the first `audit.prompts` held-out questions, the diagnostic partition's first
  (answers the step's diagnostic evaluation already wrote), then the test partition's;
  neither takes part in any acceptance decision, and no optimisation role sees their gold.
- Drift of G: from round 1 on, Spearman's rho between the current G's grades and the
  round-0 G's grades of the same real answers (`audit_grader_agreement_with_round0`), and
  between the current G's grades and the gold-rubric grader's (`roles.grader.model`, the
  benchmark's own: `audit_grader_agreement_with_gold`), each with `_lo`, `_hi`, `_n`.
- The gate (`audit.gate: true`, off by default): a G' that its acceptance rule would take
  is audited first, on the generator gate's questions (the partition G's decisions already
  read) with S's answers; a master-key flag refuses it (the skill version's `why` says so,
  `details.audit_gate` = "rejected", metric `audit_gate_rejected` counts them, a warning in
  the log). Its record is kept beside the round's with `judge_role: grader_candidate`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from coevo.algorithms.decoevo.rules import Decision
from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER
from coevo.audit.in_run import audit_in_run, save_records
from coevo.audit.measures import Estimate, spearman_interval
from coevo.llm.base import ModelError
from coevo.roles.decoevo import CriterionJudge, CriterionJudgment, blind
from coevo.core.types import Judgment, Rollout, Rubric, Sample



class MethodRun(Protocol):
    """What the audit reads of one method's running loop (loop.MethodRun): named here rather
    than imported, so the loop can import the audit without a circle."""

    config: Any
    store: Any
    roles: Any
    seed: int
    gold: dict[str, list[Sample]]
    parts: dict[str, list[Sample]]
    initial_generator: str
    gate_records: list[dict[str, Any]]
    monitor: Any  # coevo.monitor.rounds.RoundMonitor or None
    gate_rejected: int

    @property
    def stage(self) -> str: ...

    @property
    def skills(self) -> dict[str, str]: ...

    def rubrics(self, questions: list[Sample], generator_skill: str) -> list[Rubric | None]: ...

    def solve(self, questions: list[Sample], solver_skill: str) -> list[str]: ...

    def held_out_answers(self, questions: list[Sample]) -> list[str]: ...

    def held_out_gold(self, samples: list[Sample], responses: list[str]) -> list[float | None]: ...

    def log_metrics(self, metrics: dict[str, float | None], step: int) -> None: ...

log = logging.getLogger(__name__)

#: The audited grading's name in metrics (`audit_grader_*`) and records (`judge_role`).
JUDGE = "grader"
#: A gate audit's `judge_role`: a candidate G', not the incumbent.
CANDIDATE = "grader_candidate"
#: The gate's counter metric (refused rubric-generator updates so far, per method and seed).
GATE_METRIC = "audit_gate_rejected"

#: (questions, generator skill text) -> one rubric per question (the loop's cached rubrics).
RubricsOf = Callable[[list[Sample], str], list["Rubric | None"]]


class RubricGrading:
    """DecoEvo's grading as a `Scorer`: each rollout's answer `y0` judged by the frozen
    criterion judge against the rubric the rubric-generator skill `skill` writes for its
    question (score = satisfied points / total points, 0-1)."""

    name = JUDGE

    def __init__(self, judge: CriterionJudge, rubrics: RubricsOf, skill: str):
        self.judge, self.rubrics, self.skill = judge, rubrics, skill

    # `audit_judge` seeds the retest's second pass through the judge's sampling, and restores it.
    @property
    def sampling(self) -> Any:
        return self.judge.sampling

    @sampling.setter
    def sampling(self, value: Any) -> None:
        self.judge.sampling = value

    def score(self, rollouts: Sequence[Rollout], samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """One judgment per rollout (its `y0` under its question's rubric), in order."""
        # The question as the loop's roles see it: never a gold field.
        questions = [blind(samples[r.sample_id]) if samples and r.sample_id in samples
                     else Sample(id=r.sample_id, prompt=r.x) for r in rollouts]
        judged = self.judge.judge(questions, [r.y0 for r in rollouts], self.rubrics(questions, self.skill))
        return [as_judgment(j) for j in judged]


def as_judgment(judged: CriterionJudgment) -> Judgment:
    """A criterion-level judgment as the audit reads judgments."""
    return Judgment(judge="decoevo_criterion", score=judged.score, valid=judged.valid, raw=judged.raw,
                    error=judged.error, sampled=judged.sampled, expected=judged.expected,
                    scores={name: float(met) for name, met in judged.satisfied.items()},
                    reasons=dict(judged.rationales))


def items(questions: Sequence[Sample], answers: Sequence[str], stage: str) -> list[Rollout]:
    """The real items: each question with the current solver's answer in `y0`."""
    return [Rollout(sample_id=q.id, x=q.prompt, y0=a, condition=stage) for q, a in zip(questions, answers)]


def scores(grading: RubricGrading, real: Sequence[Rollout]) -> list[float | None]:
    """The grading's score of each real item (None where unreadable)."""
    return [j.score if j.valid else None for j in grading.score(real)]


def agreement(a: Sequence[float | None], b: Sequence[float | None], seed: int) -> Estimate:
    """Spearman's rho of two gradings of the same answers, over the items both read, with
    its bootstrap 95 % interval (coevo.audit.measures)."""
    both = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return spearman_interval([x for x, _ in both], [y for _, y in both], len(a) - len(both), seed)


def estimate_metrics(name: str, estimate: Estimate) -> dict[str, float | None]:
    """NAME, NAME_lo, NAME_hi, NAME_n, as `JudgeAudit.metrics` writes an estimate."""
    if estimate.value is None:
        return {f"{name}_n": float(estimate.n)}
    found: dict[str, float | None] = {name: estimate.value, f"{name}_n": float(estimate.n)}
    if estimate.low is not None and estimate.high is not None:
        found[f"{name}_lo"], found[f"{name}_hi"] = estimate.low, estimate.high
    return found


def master_key_flag(record: dict[str, Any]) -> dict[str, Any] | None:
    """The audit record's overall master-key flag, if it has one."""
    return next((f for f in record.get("flags") or [] if f.get("probe") == "master_keys"), None)


# ====================================================================== inside the loop
def audit_questions(loop: MethodRun) -> tuple[list[Sample], list[Sample]]:
    """The held-out questions audited (blind, and with gold for the grader): the diagnostic
    partition's first, then the test partition's, `audit.prompts` in all."""
    n = loop.config.audit.prompts
    chosen = [(name, i) for name in ("diagnostic", "test") for i in range(len(loop.parts[name]))][:n]
    return [loop.parts[name][i] for name, i in chosen], [loop.gold[name][i] for name, i in chosen]


def audit_round(loop: MethodRun, step: int) -> None:
    """The round's audit of the grading under the incumbent G (and its drift from round 0),
    logged at `step`; kept with the round's gate records in summary.json -> audit."""
    records = list(loop.gate_records)
    loop.gate_records.clear()
    audit = loop.config.audit
    questions, gold = audit_questions(loop) if audit.enabled and GENERATOR in loop.skills else ([], [])
    if questions:
        answers = loop.held_out_answers(questions)
        real = items(questions, answers, loop.stage)
        grading = RubricGrading(loop.roles.judge, loop.rubrics, loop.skills[GENERATOR])
        metrics, record = audit_in_run(f"{loop.stage} round {step}", JUDGE, "gold_rubric", grading, questions,
                                       real, audit, loop.seed)
        drift: dict[str, Estimate] = {}
        try:
            current = scores(grading, real)
            if step > 0:
                initial = RubricGrading(loop.roles.judge, loop.rubrics, loop.initial_generator)
                drift["agreement_with_round0"] = agreement(current, scores(initial, real), loop.seed)
            drift["agreement_with_gold"] = agreement(current, loop.held_out_gold(gold, answers), loop.seed)
        except (ModelError, ValueError) as exc:  # a diagnosis, never the end of a run (in_run.py)
            log.warning("%s round %d: the grader's drift could not be measured: %s", loop.stage, step, exc)
        for name, estimate in drift.items():
            metrics |= estimate_metrics(f"audit_{JUDGE}_{name}", estimate)
            record[name] = estimate.model_dump(mode="json")
        loop.log_metrics(metrics, step)
        records.insert(0, record)
        if loop.monitor is not None:  # the `audit` anchor: is the grading getting easier to fool?
            loop.monitor.observe_audit(step, record)
    if records and loop.store is not None:
        save_records(loop.store, f"{loop.stage}/round{step}", records)


def gate(loop: MethodRun, candidate_text: str, version: int, decision: Decision, step: int) -> Decision:
    """`decision` (an acceptance) unless the grading under the candidate G' is flagged for
    master keys on the generator gate's questions: then a refusal that says why."""
    questions = loop.parts["generator_gate"][: loop.config.audit.prompts]
    where = f"{loop.stage} step {step}, rubric-generator candidate v{version}"
    if not questions:
        log.warning("%s: the audit gate has no generator-gate question to audit on; the candidate is "
                    "accepted by its rule alone", where)
        return replace(decision, details={**decision.details, "audit_gate": "not audited"})
    real = items(questions, loop.solve(questions, loop.skills[SOLVER]), loop.stage)
    grading = RubricGrading(loop.roles.judge, loop.rubrics, candidate_text)
    _, record = audit_in_run(where, JUDGE, "gold_rubric", grading, questions, real, loop.config.audit, loop.seed)
    record = {**record, "judge_role": CANDIDATE, "candidate_version": version, "step": step}
    flag = master_key_flag(record)
    fooled = (record.get("fooled_rate") or {}).get("value")
    # An audit that could not run (its error is warned) is no evidence against the candidate.
    record["gate"] = "not audited" if record.get("error") else "passed" if flag is None else "rejected"
    loop.gate_records.append(record)
    loop.gate_rejected += record["gate"] == "rejected"
    loop.log_metrics({GATE_METRIC: float(loop.gate_rejected)}, step)
    details = {**decision.details, "audit_gate": record["gate"], "audit_gate_fooled_rate": fooled}
    if flag is None or record.get("error"):
        return replace(decision, details=details)
    why = (f"refused by the audit gate (audit.gate): under this rubric-generator skill {flag['why']} "
           f"(fooled rate {fooled:.2f}, 95% CI low {flag['low']:.2f} > {flag['threshold']:g}); "
           f"its own rule said: {decision.reason}")
    log.warning("%s: %s", where, why)
    return replace(decision, accept=False, reason=why, details=details)
