"""DeepResearch-Gym's report-level judges (TAIScore §5.1 evaluates its deep-research actor with
them): key points supported / contradicted / not mentioned, and the report's quality.

Both are written from the benchmark's description in the TAIScore paper and in DeepResearch-Gym
(Coelho et al., 2025), not copied from its scripts: the prompts
(coevo/prompts/deepresearch_key_points.md, deepresearch_quality.md) and the quality criteria
(`QUALITY_CRITERIA`) are ours. Each judge asks once per report (every key point of a report in
one call), decodes under a JSON Schema, reads the answer leniently, and re-asks an unreadable one
as every judge does (`Judge._judge_all`). The metrics are computed in code:
`coevo/eval/deepresearch_gym.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coevo.roles import schemas
from coevo.roles.judges import Judge
from coevo.roles.parsing import Parsed, extract_json_object, normalise_key, parse_scored_dimensions, reason_of
from coevo.core.types import Completion, Judgment, Sample

#: Report-level criteria, written from DeepResearch-Gym's description (each scored 1-10).
QUALITY_CRITERIA = ("clarity", "depth", "balance", "breadth", "support", "insightfulness")
VERDICTS = ("supported", "contradicted", "not_mentioned")
#: Other spellings a judge writes for a verdict (normalised keys).
_VERDICT_ALIASES = {"support": "supported", "supports": "supported", "yes": "supported",
                    "contradict": "contradicted", "contradicts": "contradicted", "contradiction": "contradicted",
                    "not_supported": "not_mentioned", "missing": "not_mentioned", "omitted": "not_mentioned",
                    "absent": "not_mentioned", "no": "not_mentioned", "none": "not_mentioned"}


def key_points_of(sample: Sample) -> list[str]:
    """A DeepResearch-Gym sample's reference key points (`meta["key_points"]`), or []."""
    points = sample.meta.get("key_points")
    return [str(p) for p in points] if isinstance(points, list) else []


def required_key_points(samples: Sequence[Sample]) -> list[list[str]]:
    """Each sample's key points; a sample without any is refused (nothing to judge against)."""
    points = [key_points_of(s) for s in samples]
    for sample, found in zip(samples, points):
        if not found:
            raise ValueError(f"sample {sample.id!r} has no key points (meta['key_points']) to judge against")
    return points


def key_point_schema(n: int) -> dict[str, Any]:
    """One entry per key point, in order: its number, a verdict, a short reason."""
    entries = [{"type": "object", "required": ["point", "verdict", "reason"], "additionalProperties": False,
                "properties": {"point": {"const": k}, "verdict": {"enum": list(VERDICTS)},
                               "reason": schemas.REASON}} for k in range(1, n + 1)]
    return {"type": "object", "required": ["key_points"], "additionalProperties": False,
            "properties": {"key_points": {"type": "array", "prefixItems": entries, "minItems": n, "maxItems": n}}}


class _ReportJudge(Judge):
    """A judge of a report written for a research question: never a rollout judge or a reward."""

    reads = ("x", "y0")
    judges_rollouts = False
    expectable = False

    @staticmethod
    def _question(sample: Sample) -> str:
        return str(sample.meta.get("query", sample.prompt))  # the question, not the report-writing prompt


class KeyPointJudge(_ReportJudge):
    """Each reference key point of a report: supported, contradicted or not mentioned.

    The Judgment's `scores` are `kpr` and `kpc` (percent of the key points supported and
    contradicted), its `score` the KPR, its `reasons` the verdict of each point ("1", "2", ...),
    and its extra field `verdicts` the verdicts in order. A missing or unreadable verdict makes
    the answer unreadable: a KPR over some of the points would not be the benchmark's.
    """

    name = "key_points"
    default_template = "deepresearch_key_points"

    def judge(self, samples: Sequence[Sample], reports: Sequence[str]) -> list[Judgment]:
        """One Judgment per (sample, report), in order; every sample needs key points."""
        points = required_key_points(samples)
        fields = [{"question": self._question(s), "report": y,
                   "key_points": "\n".join(f"{k}. {p}" for k, p in enumerate(found, start=1))}
                  for s, y, found in zip(samples, reports, points)]

        def read(i: int, completion: Completion) -> Judgment:
            parsed, verdicts = parse_key_points(completion.text, len(points[i]))
            return self._judgment(completion.text, parsed, parsed.scores.get("kpr"), verdicts=verdicts)

        return self._judge_all(fields, [key_point_schema(len(p)) for p in points], read)


def parse_key_points(raw: str, n: int) -> tuple[Parsed, list[str]]:
    """(parsed, verdicts) of a key-point answer: a list of {point, verdict} entries, or an
    object {"1": "supported", ...}; `scores` kpr and kpc in percent of the `n` points."""
    data = extract_json_object(raw, ["key_points", "points", "verdicts"])
    if data is None:
        return Parsed.invalid("no JSON object found in the answer"), []
    entries = next((data[k] for k in ("key_points", "points", "verdicts") if k in data), data)
    given: dict[int, Any] = {}
    if isinstance(entries, dict):
        for key, value in entries.items():
            if str(key).isdigit():
                given[int(key)] = value
    elif isinstance(entries, list):
        for position, entry in enumerate(entries, start=1):
            number = entry.get("point", entry.get("id", position)) if isinstance(entry, dict) else position
            given[int(number) if str(number).isdigit() else position] = entry
    verdicts, errors, reasons = [], [], {}
    for k in range(1, n + 1):
        verdict = _verdict(given.get(k))
        if verdict is None:
            errors.append(f"key point {k}: no verdict ({'/'.join(VERDICTS)})")
            continue
        verdicts.append(verdict)
        reasons[str(k)] = verdict + (f": {reason}" if (reason := reason_of(given[k])) else "")
    if errors:
        return Parsed.invalid("; ".join(errors), data=data), []
    scores = {"kpr": 100.0 * verdicts.count("supported") / n, "kpc": 100.0 * verdicts.count("contradicted") / n}
    return Parsed(scores=scores, reasons=reasons, data=data), verdicts


def _verdict(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("verdict", value.get("label", value.get("status")))
    if not isinstance(value, str):
        return None
    key = normalise_key(value)
    return key if key in VERDICTS else _VERDICT_ALIASES.get(key)


class ReportQualityJudge(_ReportJudge):
    """The report's quality: 1-10 on each of `QUALITY_CRITERIA`; `score` is their mean mapped
    linearly onto 0-100 ((mean - 1) / 9 x 100), the scale the paper reports."""

    name = "report_quality"
    default_template = "deepresearch_quality"

    def judge(self, samples: Sequence[Sample], reports: Sequence[str]) -> list[Judgment]:
        """One Judgment per (sample, report), in order."""
        fields = [{"question": self._question(s), "report": y} for s, y in zip(samples, reports)]
        answer = schemas.scored_dimensions(QUALITY_CRITERIA, None)

        def read(_i: int, completion: Completion) -> Judgment:
            parsed = parse_scored_dimensions(completion.text, QUALITY_CRITERIA)
            score = None
            if parsed.valid:
                score = quality_percent(sum(parsed.scores[c] for c in QUALITY_CRITERIA) / len(QUALITY_CRITERIA))
            return self._judgment(completion.text, parsed, score)

        return self._judge_all(fields, [answer] * len(fields), read)


def quality_percent(mean: float) -> float:
    """A 1-10 mean on the paper's 0-100 scale: 1 -> 0, 10 -> 100."""
    return (mean - 1.0) / 9.0 * 100.0


__all__ = ["KeyPointJudge", "QUALITY_CRITERIA", "ReportQualityJudge", "VERDICTS", "key_points_of",
           "parse_key_points", "quality_percent", "required_key_points"]
