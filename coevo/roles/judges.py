"""Judges: a template, a parser and a model, batched over a list of items.

Each judge renders one prompt per item, asks the model once for the whole batch, and
returns one `Judgment` per item, in order. An answer that cannot be read becomes a
`Judgment(valid=False, score=None)` that keeps the raw text and says why; it never raises.
Every Judgment carries the template's hash in its extra field `template`, so a stored
score can always be traced to the exact prompt that produced it.

Critique-blind judges (outcome gain, pairwise) are blind by construction: they never pass
the critique to their template, so even an overriding template cannot show it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from coevo.llm.base import ChatModel, user
from coevo.prompts import Template, load_template
from coevo.roles import schemas
from coevo.roles.parsing import (
    Parsed,
    extract_json_object,
    normalise_key,
    parse_score,
    parse_scored_dimensions,
    parse_single_answer,
    reason_of,
)
from coevo.types import Judgment, Rollout, Sample, Sampling


class Judge:
    """Base of every judge: holds the model, the sampling and the (hashed) template.

    Subclasses add a `judge(...)` method whose inputs fit what they score.
    """

    name: ClassVar[str]
    default_template: ClassVar[str]

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None,
                 *, structured: bool = True):
        """`template` overrides the bundled prompt with a file path (or a bundled name).

        `structured` asks the backend to decode under the answer's JSON Schema (see
        `coevo.roles.schemas`); turn it off for a custom template with another format.
        """
        self.model = model
        self.sampling = sampling
        self.structured = structured
        self.template: Template = load_template(str(template or self.default_template))

    def _ask(self, fields: list[dict[str, Any]],
             answer_schemas: Sequence[dict[str, Any] | None] | None = None) -> list[str]:
        """Render every item and ask for all of them; one answer per item, in order.

        Items that share an answer schema go in one batched call; a judge whose schema
        depends on the item (the gold rubric's criterion names) makes one call per schema.
        """
        if not fields:
            return []
        conversations = [user(self.template.render(**f)) for f in fields]
        if not self.structured or answer_schemas is None:
            answer_schemas = [None] * len(fields)
        groups: dict[str | None, list[int]] = {}
        for i, schema in enumerate(answer_schemas):
            groups.setdefault(schemas.as_text(schema), []).append(i)
        answers = [""] * len(fields)
        for schema_text, rows in groups.items():
            sampling = self.sampling.model_copy(update={"json_schema": schema_text})
            outputs = self.model.generate([conversations[i] for i in rows], sampling, n=1)
            # A backend that returns no completion for an item is a model failure, not ours.
            for i, completions in zip(rows, outputs):
                answers[i] = completions[0].text if completions else ""
        return answers

    def _judgment(self, raw: str, parsed: Parsed, score: float | None, **extra: Any) -> Judgment:
        return Judgment(
            judge=self.name,
            scores=parsed.scores,
            reasons=parsed.reasons,
            score=score if parsed.valid else None,
            raw=raw,
            valid=parsed.valid,
            error=parsed.error if not parsed.valid else None,
            template=self.template.hash,
            **extra,
        )


class _DimensionJudge(Judge):
    """A judge whose answer is a JSON object of 1–10 scores, one per dimension."""

    dimensions: ClassVar[tuple[str, ...]]
    aliases: ClassVar[dict[str, str]] = {}
    needs_revision: ClassVar[bool] = True
    #: A key the judge must also answer whose value IS the final score (TAIScore's
    #: "score"); without one the final score is the mean of the dimensions.
    final_key: ClassVar[str | None] = None

    def judge(self, rollouts: Sequence[Rollout]) -> list[Judgment]:
        """Score each rollout's (x, y0, c[, y1]), one Judgment per rollout, in order."""
        revision = self.needs_revision
        fields = [_rollout_fields(r, critique=True, revision=revision) for r in rollouts]
        required = self.dimensions + ((self.final_key,) if self.final_key else ())
        answer = schemas.scored_dimensions(self.dimensions, self.final_key)
        judgments = []
        for raw in self._ask(fields, [answer] * len(fields)):
            parsed = parse_scored_dimensions(raw, required, aliases=self.aliases)
            if self.final_key:
                final = parsed.scores.pop(self.final_key, None)
                parsed.reasons.pop(self.final_key, None)
            else:
                final = sum(parsed.scores.get(d, 0.0) for d in self.dimensions) / len(
                    self.dimensions
                )
            judgments.append(self._judgment(raw, parsed, final))
        return judgments


class TaiScoreJudge(_DimensionJudge):
    """Table 14: four 1–10 diagnostics plus a final 1–10 `score`, which is the reward."""

    name = "taiscore"
    default_template = "judge_taiscore"
    dimensions = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    # The rubric calls the third dimension "Targeted Quality Gain"; models echo that name.
    aliases = {"targeted_quality_gain": "quality_gain", "final_score": "score"}
    final_key = "score"


class CritiqueQualityJudge(_DimensionJudge):
    """Table 8: the critique alone, given (x, y0), on six 1–10 dimensions; score = mean."""

    name = "critique_quality"
    default_template = "judge_critique_quality"
    dimensions = (
        "specificity", "actionability", "priority", "faithfulness", "coverage",
        "constructiveness",
    )
    needs_revision = False


class AdherenceJudge(_DimensionJudge):
    """Table 9: how well y1 implements c, on four 1–10 dimensions; score = mean."""

    name = "adherence"
    default_template = "judge_adherence"
    dimensions = (
        "main_issue_adherence", "completeness_of_adoption", "faithful_implementation",
        "non_superficial_revision",
    )


class OutcomeGainJudge(Judge):
    """Table 13: is y1 better than y0 for x? 1 / 0.5 / 0, without seeing the critique."""

    name = "outcome_gain"
    default_template = "judge_outcome_gain"
    ANSWERS: ClassVar[dict[float, float]] = {1.0: 1.0, 0.5: 0.5, 0.0: 0.0}

    def judge(self, rollouts: Sequence[Rollout]) -> list[Judgment]:
        """One judgment per rollout; `scores["gain"]` and `score` are 1, 0.5 or 0."""
        fields = [_rollout_fields(r, critique=False, revision=True) for r in rollouts]
        judgments = []
        for raw in self._ask(fields, [schemas.choice([1, 0.5, 0])] * len(fields)):
            value, error = parse_single_answer(raw, self.ANSWERS)
            parsed = Parsed.invalid(error) if error else Parsed(scores={"gain": value})
            judgments.append(self._judgment(raw, parsed, value))
        return judgments


def order_swapped(item_id: str, seed: int = 0) -> bool:
    """Whether the pairwise judge shows the second response first for this item.

    Derived from a hash of (seed, id), not from Python's salted `hash`, so the order is the
    same on every run and does not depend on which other items share the batch.
    """
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random() < 0.5


class PairwiseJudge(Judge):
    """D.3: critique-blind preference between two responses shown in random order.

    The answer is mapped back to the ORIGINAL order: `scores["preference"]` is 1.0 when
    the second original response wins (y1 in `judge_rollouts`), 0.0 when the first wins,
    0.5 for a tie. Extra fields `shown_order` (labels in the order shown) and `winner`.
    """

    name = "pairwise"
    default_template = "judge_pairwise"
    ANSWERS: ClassVar[dict[Any, str]] = {1.0: "1", 2.0: "2", "tie": "tie"}

    def judge(
        self,
        prompts: Sequence[str],
        first: Sequence[str],
        second: Sequence[str],
        *,
        ids: Sequence[str] | None = None,
        seed: int = 0,
        rng: random.Random | None = None,
        labels: tuple[str, str] = ("first", "second"),
    ) -> list[Judgment]:
        """Compare `first[i]` with `second[i]` for `prompts[i]`.

        The shown order comes from `rng` when given (one draw per item, in order), else
        from `order_swapped(ids[i], seed)`; without `ids` the prompt text stands in.
        """
        if not len(prompts) == len(first) == len(second):
            raise ValueError("prompts, first and second must have the same length")
        keys = list(ids) if ids is not None else list(prompts)
        swapped = [
            rng.random() < 0.5 if rng is not None else order_swapped(str(key), seed)
            for key in keys
        ]
        fields = [
            {"prompt": x, "response_1": b if swap else a, "response_2": a if swap else b}
            for x, a, b, swap in zip(prompts, first, second, swapped)
        ]
        judgments = []
        answer = schemas.choice([1, 2, "tie"])
        for raw, swap in zip(self._ask(fields, [answer] * len(fields)), swapped):
            shown = [labels[1], labels[0]] if swap else [labels[0], labels[1]]
            answer, error = parse_single_answer(raw, self.ANSWERS, words=("tie",))
            reasons = {"shown_order": ", ".join(shown)}
            if error:
                parsed, winner, preference = Parsed.invalid(error, reasons=reasons), None, None
            else:
                reasons["answer"] = answer
                winner = "tie" if answer == "tie" else shown[int(answer) - 1]
                preference = 0.5 if winner == "tie" else float(winner == labels[1])
                parsed = Parsed(scores={"preference": preference}, reasons=reasons)
            judgments.append(self._judgment(raw, parsed, preference, shown_order=shown,
                                            winner=winner))
        return judgments

    def judge_rollouts(
        self, rollouts: Sequence[Rollout], *, seed: int = 0, rng: random.Random | None = None
    ) -> list[Judgment]:
        """Is y1 preferred over y0? `preference` 1.0 = y1 wins (the DPO-eligible case)."""
        for rollout in rollouts:
            _require(rollout, "y1")
        return self.judge(
            [r.x for r in rollouts], [r.y0 for r in rollouts], [r.y1 or "" for r in rollouts],
            ids=[r.sample_id for r in rollouts], seed=seed, rng=rng, labels=("y0", "y1"),
        )


class GoldRubricJudge(Judge):
    """WritingBench style: 1–10 per gold criterion; `score` = weight-averaged in code."""

    name = "gold_rubric"
    default_template = "judge_gold_rubric"
    _NAME_KEYS = ("name", "criterion", "title")

    def judge(self, samples: Sequence[Sample], responses: Sequence[str]) -> list[Judgment]:
        """Score `responses[i]` against `samples[i].rubric`; a missing criterion is invalid."""
        if len(samples) != len(responses):
            raise ValueError("samples and responses must have the same length")
        for sample in samples:
            if sample.rubric is None or not sample.rubric.criteria:
                raise ValueError(f"sample {sample.id!r} has no gold rubric to judge against")
            if sum(c.weight for c in sample.rubric.criteria) <= 0:
                raise ValueError(f"sample {sample.id!r}: rubric weights must sum to > 0")
        fields = [
            {"prompt": s.prompt, "response": y, "criteria": _criteria_block(s)}
            for s, y in zip(samples, responses)
        ]
        judgments = []
        answers = [schemas.criteria_scores([c.name for c in s.rubric.criteria]) for s in samples]
        for raw, sample in zip(self._ask(fields, answers), samples):
            parsed = self._parse(raw, sample)
            score = None
            if parsed.valid:
                criteria = sample.rubric.criteria  # type: ignore[union-attr]
                total = sum(c.weight for c in criteria)
                score = sum(c.weight * parsed.scores[c.name] for c in criteria) / total
            judgments.append(self._judgment(raw, parsed, score))
        return judgments

    def _parse(self, raw: str, sample: Sample) -> Parsed:
        # Criterion names count too: a model may drop the "criteria" wrapper.
        data = extract_json_object(raw, ["criteria"] + [c.name for c in sample.rubric.criteria])
        if data is None:
            return Parsed.invalid("no JSON object found in the answer")
        entries = data.get("criteria", data)
        given: dict[str, list[Any]] = {}
        if isinstance(entries, dict):  # {"criteria": {"Clarity": 8, ...}}
            for key, value in entries.items():
                given.setdefault(normalise_key(key), []).append(value)
        elif isinstance(entries, list):
            for entry in entries:
                if not isinstance(entry, dict):
                    continue
                entry = {normalise_key(k): v for k, v in entry.items()}
                name = next((entry[k] for k in self._NAME_KEYS if k in entry), None)
                if name is not None:
                    given.setdefault(normalise_key(name), []).append(entry)
        else:
            return Parsed.invalid("key 'criteria' is neither a list nor an object")
        parsed, errors = Parsed(data=data), []
        for criterion in sample.rubric.criteria:  # type: ignore[union-attr]
            values = given.get(normalise_key(criterion.name))
            if not values:
                errors.append(f"missing criterion {criterion.name!r}")
                continue
            scores = {parse_score(v, 1, 10) for v in values}
            if len(scores) > 1:
                errors.append(f"criterion {criterion.name!r} scored twice, differently")
                continue
            score, error = scores.pop()
            if error:
                errors.append(f"criterion {criterion.name!r}: {error}")
                continue
            parsed.scores[criterion.name] = score
            if reason := reason_of(values[0]):
                parsed.reasons[criterion.name] = reason
        if errors:
            parsed.valid, parsed.error = False, "; ".join(errors)
        return parsed


class QueryFilterJudge(Judge):
    """Table 11: grade a query 1–5; decision SKIP (1–2) or GRADE (3–5) follows the score."""

    name = "query_filter"
    default_template = "query_filter"
    _OPTIONAL_FIELDS = ("ability", "domain", "category", "language_hint")

    def judge(self, samples: Sequence[Sample]) -> list[Judgment]:
        """One query per call; extra field `decision`; a model decision that contradicts
        its own score is overridden by the score rule (noted in `reasons["decision"]`)."""
        fields = [self._fields(s) for s in samples]
        judgments = []
        answers = [schemas.query_grade()] * len(samples)
        for raw, sample in zip(self._ask(fields, answers), samples):
            parsed, model_decision = self._parse(raw, sample.id)
            score = parsed.scores.get("quality") if parsed.valid else None
            decision = None if score is None else ("GRADE" if score >= 3 else "SKIP")
            if decision and model_decision and model_decision != decision:
                parsed.reasons["decision"] = (
                    f"model said {model_decision}; score {score:g} means {decision}"
                )
            judgments.append(self._judgment(raw, parsed, score, decision=decision))
        return judgments

    def _fields(self, sample: Sample) -> dict[str, str]:
        meta = dict(sample.meta)
        if sample.genre and "domain" not in meta:
            meta["domain"] = sample.genre
        fields = {"id": sample.id, "query": sample.prompt}
        for key in self._OPTIONAL_FIELDS:
            fields[key] = str(meta.get(key) or "not available")
        return fields

    def _parse(self, raw: str, sample_id: str) -> tuple[Parsed, str | None]:
        data = extract_json_object(raw, ["results", "score"])
        if data is None:
            return Parsed.invalid("no JSON object found in the answer"), None
        results = data.get("results", [data])
        if isinstance(results, dict):
            results = [results]
        entries = [e for e in results if isinstance(e, dict)] if isinstance(results, list) else []
        matching = [e for e in entries if str(e.get("id", "")) == sample_id]
        if len(entries) > 1 and not matching:
            return Parsed.invalid(f"{len(entries)} results, none with id {sample_id!r}"), None
        entry = (matching or entries or [{}])[0]
        if "score" not in entry:
            return Parsed.invalid("missing key 'score' in the result", data=data), None
        score, error = parse_score(entry["score"], 1, 5)
        if error:
            return Parsed.invalid(f"key 'score': {error}", data=data), None
        parsed = Parsed(scores={"quality": score}, data=data)
        if isinstance(entry.get("rationale"), str):
            parsed.reasons["rationale"] = entry["rationale"]
        decision = entry.get("decision")
        return parsed, decision.strip().upper() if isinstance(decision, str) else None


#: Plain lookup for configs that name a judge.
JUDGES: dict[str, type[Judge]] = {
    judge.name: judge
    for judge in (TaiScoreJudge, CritiqueQualityJudge, AdherenceJudge, OutcomeGainJudge,
                  PairwiseJudge, GoldRubricJudge, QueryFilterJudge)
}


def _rollout_fields(rollout: Rollout, *, critique: bool, revision: bool) -> dict[str, str]:
    fields = {"prompt": rollout.x, "response": rollout.y0}
    if critique:
        fields["critique"] = _require(rollout, "c")
    if revision:
        fields["revision"] = _require(rollout, "y1")
    return fields


def _require(rollout: Rollout, attribute: str) -> str:
    value = getattr(rollout, attribute)
    if value is None:
        raise ValueError(f"rollout of sample {rollout.sample_id!r} has no {attribute}")
    return value


def _criteria_block(sample: Sample) -> str:
    lines = []
    for i, criterion in enumerate(sample.rubric.criteria, 1):  # type: ignore[union-attr]
        description = f": {criterion.description}" if criterion.description else ""
        lines.append(f"{i}. {criterion.name}{description}")
    return "\n".join(lines)
