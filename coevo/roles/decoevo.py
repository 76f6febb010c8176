"""DecoEvo's roles: one frozen backbone, seven role-specific prompts.

solver · rubric generator · criterion-level judge · solver-skill rewriter · structural
auditor · near-tie contrastive auditor (two stages) · generator-skill rewriter.

Every structured answer is decoded under a JSON Schema (`Sampling.json_schema`), which is
what lets a 135M backbone return parseable output, and read leniently with
`coevo.roles.parsing`. An answer that cannot be read becomes a result with `valid=False`
and its raw text kept: it is counted by the loop and never raises.

The roles whose answer is a score (the criterion judge's true / false verdicts, the
structural auditor's 0-10 adequacy) score by expectation as the judges in
`coevo.roles.judges` do (G-Eval): from the probabilities of the verdict's or the score's
tokens where the backend returns them (`JudgeSampling.scoring`), keeping the value written
beside the expected one.

No role here ever receives a gold rubric: they take question *text* (see `blind`), and
the gold-rubric grader lives apart (`coevo.roles.judges.GoldRubricJudge`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coevo.llm.base import ChatModel, user
from coevo.llm.call_tags import tagged
from coevo.prompts import load_template
from coevo.roles.base import Role, ScoringRole
from coevo.roles.expected import expected_value, integer_answers, keyed_value_offsets
from coevo.roles.judges import order_swapped
from coevo.roles.parsing import extract_json_object, normalise_key, strip_reasoning
from coevo.core.types import Completion, Criterion, Judgment, Message, Rubric, Sample, Sampling

#: Short free-text fields keep a 135M model's JSON cheap and inside max_tokens.
def _text(limit: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def blind(sample: Sample) -> Sample:
    """The question as optimisation roles may see it: no gold rubric, no reference."""
    return Sample(id=sample.id, prompt=sample.prompt, genre=sample.genre)


class _Role(Role):
    """A DecoEvo role: its JSON answers' free-text fields are capped at `text_chars`."""

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | None = None, *,
                 text_chars: int = 240):
        super().__init__(model, sampling, template)
        self.text_chars = text_chars

    def _answers(self, prompts: Sequence[str], schemas: Sequence[dict[str, Any] | None],
                 sampling: Sampling | None = None) -> list[str]:
        """The text of one answer per prompt (see `Role.ask`)."""
        return [c.text for c in self.ask(prompts, schemas, sampling)]


class _ScoringRole(_Role, ScoringRole):
    """A DecoEvo role whose answer holds a score (criterion verdicts, the audit's adequacy)."""


# -- solver --------------------------------------------------------------------------------
class Solver(_Role):
    """Answers a question with the solver skill in its prompt."""

    default_template = "decoevo_solver"
    call_role, call_step = "solver", "respond"

    def solve(self, questions: Sequence[Sample], skill: str, n: int = 1,
              sampling: Sampling | None = None) -> list[list[str]]:
        """`n` responses per question (n > 1: the outer loop's stochastic rollouts)."""
        if not questions:
            return []
        prompts = [user(self.template.render(skill=skill, question=q.prompt)) for q in questions]
        with tagged(**self.call_tags()):
            outputs = self.model.generate(prompts, sampling or self.sampling, n=n)
        return [[strip_reasoning(c.text) for c in group] for group in outputs]


# -- rubric generator -----------------------------------------------------------------------
@dataclass
class GeneratedRubric:
    """The generator's rubric for one question; `rubric` None (raw text kept) when unreadable."""

    question_id: str
    rubric: Rubric | None
    raw: str = ""
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether a rubric with at least one gradable criterion was read."""
        return self.rubric is not None


class RubricGenerator(_Role):
    """Question -> weighted, positively phrased criteria, following the generator skill."""

    default_template = "decoevo_rubric_generator"
    call_role = "rubric_generator"
    POINTS = (1, 2, 3, 4, 5)

    def __init__(self, model: ChatModel, sampling: Sampling, *, min_criteria: int = 3,
                 max_criteria: int = 6, template: str | None = None, text_chars: int = 240):
        super().__init__(model, sampling, template, text_chars=text_chars)
        if not 1 <= min_criteria <= max_criteria:
            raise ValueError(f"need 1 <= min_criteria <= max_criteria, got {min_criteria}, {max_criteria}")
        self.min_criteria, self.max_criteria = min_criteria, max_criteria

    def schema(self) -> dict[str, Any]:
        """The answer's JSON Schema: min..max criteria, each a text and 1-5 points."""
        item = _object({"criterion": _text(self.text_chars), "points": {"enum": list(self.POINTS)}})
        return _object({"criteria": {"type": "array", "items": item,
                                     "minItems": self.min_criteria, "maxItems": self.max_criteria}})

    def generate(self, questions: Sequence[Sample], skill: str) -> list[GeneratedRubric]:
        """One rubric per question, written under the generator skill text `skill`."""
        prompts = [self.template.render(skill=skill, question=q.prompt, min_criteria=self.min_criteria,
                                        max_criteria=self.max_criteria) for q in questions]
        answers = self._answers(prompts, [self.schema()] * len(prompts))
        return [self._parse(q.id, raw) for q, raw in zip(questions, answers)]

    def _parse(self, question_id: str, raw: str) -> GeneratedRubric:
        data = extract_json_object(raw, ["criteria"])
        entries = data.get("criteria") if data else None
        if not isinstance(entries, list):
            return GeneratedRubric(question_id, None, raw, "no 'criteria' list in the answer")
        criteria = []
        for entry in entries[: self.max_criteria]:
            if not isinstance(entry, dict):
                continue
            text = str(entry.get("criterion") or entry.get("description") or "").strip()
            points = _number(entry.get("points", entry.get("weight")))
            if not text or points is None or points <= 0:
                continue  # a criterion without text or a positive weight cannot be graded
            criteria.append(Criterion(name=f"c{len(criteria) + 1}", description=text,
                                      weight=min(points, max(self.POINTS))))
        if not criteria:
            return GeneratedRubric(question_id, None, raw, "no readable criterion in the answer")
        return GeneratedRubric(question_id, Rubric(criteria=criteria), raw)


def rubric_block(rubric: Rubric) -> str:
    """A rubric as prompt text: one "name (points): description" line per criterion."""
    return "\n".join(f"{c.name} ({c.weight:g} pt): {c.description}" for c in rubric.criteria)


# -- criterion-level judge ------------------------------------------------------------------
@dataclass
class CriterionJudgment:
    """Per criterion: satisfied or not, with a rationale; score = satisfied / total points.

    `sampled` is the rubric score of the verdicts written, `expected` Σ points ·
    P(satisfied) / total points from the verdict tokens' probabilities (`p_satisfied`; None
    without them); `score` is the one the judge's scoring uses.
    """

    satisfied: dict[str, bool] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    score: float | None = None
    raw: str = ""
    error: str | None = None
    sampled: float | None = None
    expected: float | None = None
    p_satisfied: dict[str, float] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """Whether the verdicts could be read into a score."""
        return self.score is not None

    def record(self) -> dict[str, Any]:
        """What the run store keeps of it: both scores, the verdicts and their probabilities."""
        return {"score": self.score, "sampled": self.sampled, "expected": self.expected,
                "satisfied": self.satisfied, "p_satisfied": self.p_satisfied, "error": self.error}


def rubric_score(rubric: Rubric, satisfied: dict[str, bool]) -> float:
    """The paper's rubric score: points of satisfied criteria over total points. With signed
    points (HealthBench's: a negative criterion is something to avoid, its points taken off
    when it is met), HealthBench's score: points met over the positive points, clipped to
    [0, 1]; with positive points only the two are the same."""
    return _points_share(rubric, {c.name: 1.0 if satisfied.get(c.name) else 0.0 for c in rubric.criteria})


def expected_rubric_score(rubric: Rubric, p_satisfied: dict[str, float]) -> float:
    """The rubric score in expectation: Σ points · P(satisfied) / total points."""
    return _points_share(rubric, p_satisfied)


def _points_share(rubric: Rubric, met: dict[str, float]) -> float:
    possible = sum(c.weight for c in rubric.criteria if c.weight > 0)
    if possible <= 0:  # a rubric of penalties alone: nothing to earn, only to lose
        return 0.0
    return min(1.0, max(0.0, sum(c.weight * met[c.name] for c in rubric.criteria) / possible))


#: A verdict as the schema writes it: the JSON boolean.
_VERDICT = {"true": 1.0, "false": 0.0}
_ZERO_TO_TEN = integer_answers(0, 10)


class CriterionJudge(_ScoringRole):
    """Judges one response against every criterion of a generated rubric, in one call.

    With `scoring: expected` each criterion counts with P(satisfied), the probability of the
    `true` token against `false` where its verdict was written, so two answers that meet
    the same criteria still differ by how surely they meet them; a verdict whose
    probabilities are missing makes the whole judgment fall back to the written verdicts.
    """

    default_template = "decoevo_judge"
    call_role, call_step = "judge:criteria", "judge"

    def schema(self, rubric: Rubric) -> dict[str, Any]:
        """The answer's JSON Schema: one verdict per criterion of `rubric`, in its order."""
        items = [_object({"id": {"const": c.name}, "rationale": _text(self.text_chars),
                          "satisfied": {"type": "boolean"}}) for c in rubric.criteria]
        n = len(items)
        return _object({"verdicts": {"type": "array", "prefixItems": items, "minItems": n,
                                     "maxItems": n}})

    def judge(self, questions: Sequence[Sample], responses: Sequence[str],
              rubrics: Sequence[Rubric | None]) -> list[CriterionJudgment]:
        """One judgment per (question, response, rubric); a missing rubric is invalid."""
        if not len(questions) == len(responses) == len(rubrics):
            raise ValueError("questions, responses and rubrics must have the same length")
        rows = [i for i, r in enumerate(rubrics) if r is not None]
        prompts = [self.template.render(question=questions[i].prompt, response=responses[i],
                                        criteria=rubric_block(rubrics[i])) for i in rows]
        answers = self.ask(prompts, [self.schema(rubrics[i]) for i in rows], self.scoring_sampling())
        out = [CriterionJudgment(error="no rubric for this question") for _ in questions]
        for i, completion in zip(rows, answers):
            out[i] = self._read(completion, rubrics[i])
        return out

    def _read(self, completion: Completion, rubric: Rubric) -> CriterionJudgment:
        judged, positions = self._parse(completion.text, rubric)
        if judged.valid and self.scoring == "expected":
            offsets = keyed_value_offsets(completion.text)
            p = {name: expected_value(completion, offsets.get(("verdicts", at, "satisfied")), _VERDICT)
                 for name, at in positions.items()}
            if None not in p.values():
                judged.p_satisfied = p  # type: ignore[assignment]
                judged.expected = judged.score = expected_rubric_score(rubric, judged.p_satisfied)
        return judged

    def _parse(self, raw: str, rubric: Rubric) -> tuple[CriterionJudgment, dict[str, int]]:
        """The written verdicts, and where in the answer's list each criterion's entry sits."""
        data = extract_json_object(raw, ["verdicts"])
        entries = data.get("verdicts") if data else None
        if not isinstance(entries, list):
            return CriterionJudgment(raw=raw, error="no 'verdicts' list in the answer"), {}
        names = [c.name for c in rubric.criteria]
        found: dict[str, dict[str, Any]] = {}
        positions: dict[str, int] = {}
        for position, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            name = normalise_key(entry.get("id", "")) or (names[position] if position < len(names) else "")
            if name in names and name not in found:
                found[name], positions[name] = entry, position
        missing = [n for n in names if n not in found or _boolean(found[n].get("satisfied")) is None]
        if missing:
            return CriterionJudgment(raw=raw, error=f"no readable verdict for {', '.join(missing)}"), {}
        satisfied = {n: bool(_boolean(found[n]["satisfied"])) for n in names}
        rationales = {n: str(found[n].get("rationale", "")) for n in names}
        score = rubric_score(rubric, satisfied)
        return CriterionJudgment(satisfied, rationales, score, raw, sampled=score), positions


class HealthBenchGrader(CriterionJudge):
    """HealthBench's grading (`roles.grader.kind: healthbench`): the gold rubric's criteria
    judged met or not, each with its signed points, scored as HealthBench scores (points met
    over the positive points, clipped to [0, 1]; `rubric_score`). A Judgment per answer, its
    score already on 0-1 (`source: "rubric_points"`: not a 1-10 grade to rescale)."""

    default_template = "healthbench_grader"
    call_role, call_step = "grader", "judge"
    name = "healthbench"

    def judge(self, samples: Sequence[Sample], responses: Sequence[str],  # type: ignore[override]
              rubrics: Sequence[Rubric | None] | None = None) -> list[Judgment]:
        rubrics = rubrics if rubrics is not None else [s.rubric for s in samples]
        verdicts = super().judge(samples, responses, rubrics)
        return [Judgment(judge=self.name, score=v.score, scores={k: float(m) for k, m in v.satisfied.items()},
                         reasons=v.rationales, raw=v.raw, valid=v.valid, error=v.error, sampled=v.sampled,
                         expected=v.expected, source=UNIT_SCORED) for v in verdicts]


#: A gold grader's `Judgment.source` whose score is already on 0-1 (not a 1-10 grade).
UNIT_SCORED = "rubric_points"


# -- rewriters ------------------------------------------------------------------------------
@dataclass
class Rewrite:
    """A rewriter's answer: the new skill `text` (None when unreadable) and its note."""

    text: str | None
    note: str = ""
    raw: str = ""
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether a non-empty skill text was read."""
        return self.text is not None


class _Rewriter(_Role):
    note_key: str

    def __init__(self, model: ChatModel, sampling: Sampling, *, max_words: int = 200,
                 template: str | None = None, text_chars: int = 240):
        super().__init__(model, sampling, template, text_chars=text_chars)
        self.max_words = max_words

    def _rewrite(self, prompt: str, seed: int | None = None) -> Rewrite:
        # Characters, not words, bound the schema: ~7 characters a word with spaces.
        schema = _object({self.note_key: _text(self.text_chars), "skill": _text(self.max_words * 7)})
        sampling = self.sampling
        if seed is not None and sampling.temperature > 0:
            # A fresh draw per step: the same inputs at a later step (a small train set, a
            # rejected edit) must not replay the very proposal the gate just refused.
            sampling = sampling.model_copy(update={"seed": seed})
        (raw,) = self._answers([prompt], [schema], sampling)
        data = extract_json_object(raw, [self.note_key, "skill"])
        text = data.get("skill") if data else None
        if not isinstance(text, str) or not text.strip():
            return Rewrite(None, raw=raw, error="no 'skill' text in the answer")
        return Rewrite(text.strip(), str(data.get(self.note_key, "")), raw)


class SolverRewriter(_Rewriter):
    """Consolidates criterion-level failures into general solver rules."""

    default_template = "decoevo_solver_rewriter"
    call_role = "solver_rewriter"
    note_key = "diagnosis"

    def rewrite(self, skill: str, failures: Sequence[dict[str, str]], seed: int | None = None) -> Rewrite:
        """A rewrite of solver skill `skill` from unmet criteria (question, criterion, rationale)."""
        lines = [f"- task: {_clip(f['question'], 160)} | unmet: {f['criterion']} | "
                 f"grader: {_clip(f['rationale'], 160)}" for f in failures]
        return self._rewrite(self.template.render(skill=skill, failures="\n".join(lines),
                                                  max_words=self.max_words), seed)


class GeneratorRewriter(_Rewriter):
    """Distils structural and contrastive audit records into general rubric principles."""

    default_template = "decoevo_generator_rewriter"
    call_role = "generator_rewriter"
    note_key = "analysis"

    def rewrite(self, skill: str, structural: Sequence["StructuralAudit"],
                contrastive: Sequence["ContrastiveRecord"], seed: int | None = None) -> Rewrite:
        """A rewrite of generator skill `skill` from the probe set's audit records."""
        s_lines = [f"- adequacy {a.adequacy:.1f}: {_clip(a.rationale, 200)} | repair: {_clip(a.repair, 200)}"
                   for a in structural if a.valid]
        c_lines = [f"- missed: {_clip(r.why_missed, 200)} | principle: {_clip(r.principle, 200)}"
                   for r in contrastive]
        return self._rewrite(self.template.render(
            skill=skill, structural="\n".join(s_lines) or "(none)",
            contrastive="\n".join(c_lines) or "(none)", max_words=self.max_words), seed)


# -- structural auditor ---------------------------------------------------------------------
@dataclass
class StructuralAudit:
    """The structural auditor's verdict on one rubric: adequacy 0-1, why, and a repair."""

    question_id: str
    adequacy: float | None  # 0..1 (the 0-10 answer / 10), by the auditor's scoring
    rationale: str = ""
    repair: str = ""
    raw: str = ""
    error: str | None = None
    #: The grade written and its expectation over the grade's tokens, both / 10.
    sampled: float | None = None
    expected: float | None = None

    @property
    def valid(self) -> bool:
        """Whether an adequacy grade 0-10 was read."""
        return self.adequacy is not None


class StructuralAuditor(_ScoringRole):
    """Sees question, generated rubric and the family's audit spec: never a response or score.

    With `scoring: expected` the adequacy is the expected 0-10 grade over its tokens.
    """

    default_template = "decoevo_structural_auditor"
    call_role = "structural_auditor"

    def __init__(self, model: ChatModel, sampling: Sampling, spec: str, template: str | None = None,
                 text_chars: int = 240):
        super().__init__(model, sampling, template, text_chars=text_chars)
        self.spec = spec
        self.schema = _object({"rationale": _text(text_chars), "adequacy": {"enum": list(range(11))},
                               "repair": _text(text_chars)})

    def audit(self, questions: Sequence[Sample], rubrics: Sequence[Rubric | None]) -> list[StructuralAudit]:
        """One audit per question; a question without a readable rubric gets adequacy 0."""
        rows = [i for i, r in enumerate(rubrics) if r is not None]
        prompts = [self.template.render(spec=self.spec, question=questions[i].prompt,
                                        rubric=rubric_block(rubrics[i])) for i in rows]
        answers = self.ask(prompts, [self.schema] * len(rows), self.scoring_sampling())
        # A question whose rubric could not be read at all is covered by nothing.
        out = [StructuralAudit(q.id, 0.0, "no readable rubric", "", error="no rubric") for q in questions]
        for i, completion in zip(rows, answers):
            out[i] = self._read(questions[i].id, completion)
        return out

    def _read(self, question_id: str, completion: Completion) -> StructuralAudit:
        raw = completion.text
        data = extract_json_object(raw, ["adequacy", "rationale", "repair"]) or {}
        value = _number(data.get("adequacy"))
        if value is None or not 0 <= value <= 10:
            return StructuralAudit(question_id, None, raw=raw, error="no adequacy score 0-10")
        expected = None
        if self.scoring == "expected":
            expected = expected_value(completion, keyed_value_offsets(raw).get(("adequacy",)), _ZERO_TO_TEN)
        chosen = value if expected is None else expected
        return StructuralAudit(question_id, chosen / 10, str(data.get("rationale", "")),
                               str(data.get("repair", "")), raw, sampled=value / 10,
                               expected=None if expected is None else expected / 10)


# -- near-tie contrastive auditor -----------------------------------------------------------
@dataclass
class BlindVerdict:
    """Stage 1: a preference formed from the question and two responses alone."""

    preferred: int | None  # 0 or 1 (index into the pair in ORIGINAL order), None = equivalent
    rationale: str = ""
    shown_swapped: bool = False
    conversation: list[Message] = field(default_factory=list)
    valid: bool = True
    error: str | None = None


@dataclass
class ContrastiveRecord:
    """(x, y+, y-, blind rationale, why the rubric missed it, missing principle)."""

    question_id: str
    question: str
    y_plus: str
    y_minus: str
    blind_rationale: str
    why_missed: str = ""
    principle: str = ""
    gap: float = 0.0


class ContrastiveAuditor(_Role):
    """Two stages: blind preference first, then the rubric and its per-criterion breakdown."""

    default_template = "decoevo_contrastive_blind"
    call_role = "contrastive_auditor"

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | None = None,
                 explain_template: str | None = None, seed: int = 0, text_chars: int = 240):
        super().__init__(model, sampling, template, text_chars=text_chars)
        self.explain_template = load_template(explain_template or "decoevo_contrastive_rubric")
        self.seed = seed
        self.blind_schema = _object({"rationale": _text(text_chars),
                                     "preference": {"enum": ["A", "B", "equivalent"]}})
        self.explain_schema = _object({"why_missed": _text(text_chars), "principle": _text(text_chars)})

    def blind_preferences(self, questions: Sequence[Sample],
                          pairs: Sequence[tuple[str, str]]) -> list[BlindVerdict]:
        """Stage 1. Receives ONLY the question and the two responses (order randomised)."""
        swapped = [order_swapped(f"{q.id}|{a}|{b}", self.seed) for q, (a, b) in zip(questions, pairs)]
        prompts = [self.template.render(question=q.prompt, response_a=b if s else a,
                                        response_b=a if s else b)
                   for q, (a, b), s in zip(questions, pairs, swapped)]
        answers = self._answers(prompts, [self.blind_schema] * len(prompts))
        out = []
        for prompt, raw, s in zip(prompts, answers, swapped):
            conversation = [*user(prompt), Message(role="assistant", content=raw)]
            data = extract_json_object(raw, ["preference", "rationale"]) or {}
            label = str(data.get("preference", "")).strip().strip(".").lower()
            if label not in ("a", "b", "equivalent"):
                out.append(BlindVerdict(None, conversation=conversation, valid=False,
                                        error="no preference A / B / equivalent"))
                continue
            shown = None if label == "equivalent" else (0 if label == "a" else 1)
            preferred = None if shown is None else (1 - shown if s else shown)
            out.append(BlindVerdict(preferred, str(data.get("rationale", "")), s, conversation))
        return out

    def explain(self, verdicts: Sequence[BlindVerdict], breakdowns: Sequence[str],
                scores: Sequence[tuple[float, float]]) -> list[tuple[str, str]]:
        """Stage 2, continuing each stage-1 conversation: why the rubric missed the difference
        and a missing principle. Only verdicts with a preference reach this stage."""
        conversations = []
        for v, breakdown, (sa, sb) in zip(verdicts, breakdowns, scores):
            # Scores in the order the auditor was shown the responses (A, B).
            shown_scores = (sb, sa) if v.shown_swapped else (sa, sb)
            preferred_shown = v.preferred if not v.shown_swapped else 1 - (v.preferred or 0)
            text = self.explain_template.render(
                preferred="AB"[preferred_shown], breakdown=breakdown,
                score_a=f"{shown_scores[0]:.2f}", score_b=f"{shown_scores[1]:.2f}")
            conversations.append([*v.conversation, *user(text)])
        if not conversations:
            return []
        sampling = self.sampling.model_copy(update={"json_schema": json.dumps(self.explain_schema)})
        with tagged(**self.call_tags("explain")):
            outputs = self.model.generate(conversations, sampling, n=1)
        out = []
        for group in outputs:
            data = extract_json_object(group[0].text if group else "", ["why_missed", "principle"]) or {}
            out.append((str(data.get("why_missed", "")), str(data.get("principle", ""))))
        return out


def breakdown_block(rubric: Rubric, first: CriterionJudgment, second: CriterionJudgment,
                    swapped: bool) -> str:
    """Per-criterion verdicts of both responses, labelled as the auditor saw them (A, B)."""
    a, b = (second, first) if swapped else (first, second)
    mark = {True: "met", False: "not met"}
    return "\n".join(f"{c.name} ({c.weight:g} pt) {c.description} | A: {mark[a.satisfied.get(c.name, False)]}"
                     f" | B: {mark[b.satisfied.get(c.name, False)]}" for c in rubric.criteria)


# -- helpers --------------------------------------------------------------------------------
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(str(value).strip().split("/")[0])
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    return {"true": True, "yes": True, "met": True, "false": False, "no": False,
            "not met": False}.get(text)


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
