"""DeepResearch-Gym's report judges as its own evaluation scripts run them (the default protocol).

The benchmark's scripts (cxcscmu/deepresearch_benchmarking: eval_kpr_async.py,
eval_quality_async.py; read, not copied: the prompts here are written in our words) differ from
one call per report (roles/deepresearch.py, `evaluation.deepresearch_protocol: single_call`):

- **key points**: one call per key point, holding the point and the report only (not the
  question), answered `supported` / `omitted` / `contradicted`; KPR and KPC are the shares of
  the report's points labelled supported and contradicted, in percent. A report with a point
  the judge never answered readably (after the usual re-ask) is left out of the means, as the
  scripts drop a report whose judging failed;
- **quality**: one call per criterion (clarity, depth, balance, breadth, support,
  insightfulness: `CRITERIA`, each described as the benchmark does, with its caps and its rule
  that a report naming no source URLs scores 0 on support, which the judge applies), an
  integer 0-10 each, and the report's quality is their mean x 10 (0-100), so a mean of 7.4
  reads 74.0 (the single-call variant's 1-10 mapping reads it 71.1).

Each Judgment per report carries what the single-call judges' do (`scores`, `score`,
`reasons`, `verdicts`), so coevo/eval/deepresearch_gym.py computes the metrics the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from coevo.roles import schemas
from coevo.roles.deepresearch import _VERDICT_ALIASES, VERDICTS, KeyPointJudge, ReportQualityJudge, _ReportJudge
from coevo.roles.deepresearch import required_key_points
from coevo.roles.parsing import extract_json_object, normalise_key
from coevo.core.types import Completion, Judgment, Sample, Sampling

#: The benchmark's labels; "omitted" is the single-call judge's "not_mentioned" (VERDICTS).
LABELS = ("supported", "omitted", "contradicted")
#: The quality criteria in the benchmark's order, each as its scripts describe it (paraphrased).
CRITERIA: dict[str, str] = {
    "clarity": "Is it organised like a report, with clear sections and a logical flow? Penalise points that "
               "overlap or repeat one another, and conversational filler.",
    "depth": "Does it analyse and synthesise critically rather than list surface facts? Length is not depth; a "
             "report that lists subtopics without examples, nuance or sources scores at most 5.",
    "balance": "Is it fair and objective, presenting the relevant perspectives? Penalise bias the evidence does "
               "not justify.",
    "breadth": "How many distinct, relevant subtopics or angles (legal, historical, cultural, ethical, ...) does "
               "it cover? The two sides of one binary debate are not breadth.",
    "support": "Are its claims backed by specific, credible, traceable evidence? Vague attributions ('studies "
               "show') do not count, numbers need their context, cherry-picking is penalised, and any such "
               "shortfall caps the score at 8. A report that gives no source URLs anywhere (e.g. in a references "
               "section) scores 0; giving URLs only meets the minimum.",
    "insightfulness": "Does it go beyond common knowledge and make non-obvious connections? Recommendations "
                      "must be concrete, actionable and backed by real examples, or the score is at most 8.",
}
#: The key-point and criterion answers' JSON Schemas (the scripts' structured outputs).
LABEL_SCHEMA = {"type": "object", "required": ["label", "justification"], "additionalProperties": False,
                "properties": {"label": {"enum": list(LABELS)}, "justification": schemas.REASON}}
RATING_SCHEMA = {"type": "object", "required": ["rating", "justification"], "additionalProperties": False,
                 "properties": {"rating": schemas.score_range(0, 10), "justification": schemas.REASON}}


class KeyPointEachJudge(_ReportJudge):
    """KPR and KPC from one call per reference key point (the benchmark's protocol)."""

    name = "key_points"
    default_template = "deepresearch_key_point"

    def judge(self, samples: Sequence[Sample], reports: Sequence[str]) -> list[Judgment]:
        """One Judgment per (sample, report), in order; every sample needs key points."""
        points = required_key_points(samples)
        owner = [i for i, found in enumerate(points) for _ in found]
        fields = [{"key_point": p, "report": y} for found, y in zip(points, reports) for p in found]
        each = self._judge_all(fields, [LABEL_SCHEMA] * len(fields), lambda _i, c: self._label(c))
        return [self._report(i, points[i], [j for j, o in zip(each, owner) if o == i]) for i in range(len(samples))]

    def _label(self, completion: Completion) -> Judgment:
        data = extract_json_object(completion.text, ["label", "verdict"])
        label = _label_of(data)
        if label is None:
            return Judgment(judge=self.name, raw=completion.text, valid=False, template=self.template.hash,
                            error=f"no label ({'/'.join(LABELS)}) in the answer")
        reason = str(data.get("justification") or data.get("reason") or "") if isinstance(data, dict) else ""
        return Judgment(judge=self.name, raw=completion.text, reasons={"label": reason}, scores={},
                        template=self.template.hash, error=None, **{"label": label})

    def _report(self, i: int, found: list[str], answers: list[Judgment]) -> Judgment:
        unread = [k for k, a in enumerate(answers, start=1) if not a.valid]
        raw = json.dumps([a.raw for a in answers])
        asked = max((a.asked for a in answers), default=1)
        if unread:
            return Judgment(judge=self.name, raw=raw, valid=False, asked=asked, template=self.template.hash,
                            error=f"key point(s) {unread} of {len(found)}: no readable label")
        labels = [getattr(a, "label") for a in answers]
        verdicts = [_VERDICT_ALIASES.get(label, label) for label in labels]  # omitted -> not_mentioned
        n = len(found)
        scores = {"kpr": 100.0 * labels.count("supported") / n, "kpc": 100.0 * labels.count("contradicted") / n}
        reasons = {str(k): label + (f": {a.reasons['label']}" if a.reasons.get("label") else "")
                   for k, (label, a) in enumerate(zip(labels, answers), start=1)}
        return Judgment(judge=self.name, scores=scores, score=scores["kpr"], sampled=scores["kpr"], reasons=reasons,
                        raw=raw, asked=asked, template=self.template.hash, verdicts=verdicts)


def _label_of(data: Any) -> str | None:
    value = data.get("label", data.get("verdict")) if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    key = normalise_key(value)
    if key in LABELS:
        return key
    alias = _VERDICT_ALIASES.get(key, key if key in VERDICTS else None)
    return "omitted" if alias == "not_mentioned" else alias


class QualityEachCriterionJudge(_ReportJudge):
    """Report quality from one 0-10 call per criterion, the mean x 10 (the benchmark's protocol)."""

    name = "report_quality"
    default_template = "deepresearch_quality_criterion"

    def judge(self, samples: Sequence[Sample], reports: Sequence[str]) -> list[Judgment]:
        """One Judgment per (sample, report), in order: `scores` each criterion's 0-10 rating."""
        fields = [{"criterion": name, "description": text, "question": self._question(s), "report": y}
                  for s, y in zip(samples, reports) for name, text in CRITERIA.items()]
        each = self._judge_all(fields, [RATING_SCHEMA] * len(fields), lambda _i, c: self._rating(c))
        per = len(CRITERIA)
        return [self._report(each[i * per:(i + 1) * per]) for i in range(len(samples))]

    def _rating(self, completion: Completion) -> Judgment:
        data = extract_json_object(completion.text, ["rating", "score"])
        value = data.get("rating", data.get("score")) if isinstance(data, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10:
            return Judgment(judge=self.name, raw=completion.text, valid=False, template=self.template.hash,
                            error="no rating from 0 to 10 in the answer")
        reason = str(data.get("justification") or data.get("reason") or "")
        return Judgment(judge=self.name, raw=completion.text, score=float(value), reasons={"rating": reason},
                        template=self.template.hash)

    def _report(self, answers: list[Judgment]) -> Judgment:
        raw = json.dumps([a.raw for a in answers])
        asked = max((a.asked for a in answers), default=1)
        unread = [name for name, a in zip(CRITERIA, answers) if not a.valid]
        if unread:
            return Judgment(judge=self.name, raw=raw, valid=False, asked=asked, template=self.template.hash,
                            error=f"criteria {unread}: no readable rating")
        scores = {name: float(a.score) for name, a in zip(CRITERIA, answers)}  # type: ignore[arg-type]
        quality = sum(scores.values()) / len(scores) * 10.0
        reasons = {name: a.reasons.get("rating", "") for name, a in zip(CRITERIA, answers)}
        return Judgment(judge=self.name, scores=scores, score=quality, sampled=quality, reasons=reasons, raw=raw,
                        asked=asked, template=self.template.hash)


#: `evaluation.deepresearch_protocol` -> (key-point judge, quality judge).
PROTOCOLS = {"official": (KeyPointEachJudge, QualityEachCriterionJudge),
             "single_call": (KeyPointJudge, ReportQualityJudge)}


def report_judges(model: Any, sampling: Sampling, protocol: str = "official") -> tuple[Any, Any]:
    """The key-point and quality judges of `protocol` on one model and decoding."""
    points, quality = PROTOCOLS[protocol]
    return points(model, sampling), quality(model, sampling)


__all__ = ["CRITERIA", "KeyPointEachJudge", "LABELS", "PROTOCOLS", "QualityEachCriterionJudge", "report_judges"]
