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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from coevo.llm.base import ChatModel
from coevo.roles import schemas
from coevo.roles.base import Scorer, Scoring, ScoringRole, resolve_scoring  # noqa: F401  (re-exported)
from coevo.roles.expected import (
    answer_distribution,
    bare_answer_offset,
    expected_value,
    integer_answers,
    keyed_value_offsets,
)
from coevo.roles.parsing import (
    Parsed,
    extract_json_object,
    normalise_key,
    parse_score,
    parse_scored_dimensions,
    parse_single_answer,
    reason_of,
)
from coevo.core.types import Completion, Judgment, Rollout, Sample, Sampling


class Judge(ScoringRole):
    """Base of every judge: a scoring role whose answers are read into `Judgment`s.

    Every judge is a `Scorer`: `score(rollouts, samples)` is the one call signature the
    pipelines use. Subclasses also keep a `judge(...)` method whose inputs fit what they
    score, and read each answer with `_judge_all(fields, schemas, read)`: one batched call
    for every item, then one more for the answers that could not be read (see `reask`).
    """

    name: ClassVar[str]
    #: The rollout fields the judge reads (x: the prompt, y0: the first response, c: the
    #: critique, y1: the revision; "rubric": the sample's gold rubric). The judge tables
    #: below (which need a critique, which a revision) are derived from it.
    reads: ClassVar[tuple[str, ...]]
    #: True where its score serves as the critic's GRPO reward (TAIScore §5's ablations).
    is_reward: ClassVar[bool] = False
    #: What a Python function standing for this judge is called with (python_scorers.py):
    #: "reward" f(x, y0, c, y1), "pairwise" f(x, a, b), "gold" f(sample, response); None:
    #: no Python stand-in.
    python_kind: ClassVar[str | None] = None
    #: False for a judge a config cannot name as a rollout judge (the query filter grades
    #: queries before any rollout exists).
    judges_rollouts: ClassVar[bool] = True
    call_step = "judge"

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None,
                 *, structured: bool = True, scoring: Scoring | None = None, reask: int = 1):
        """`template` overrides the bundled prompt with a file path (or a bundled name).

        `structured` asks the backend to decode under the answer's JSON Schema (see
        `coevo.roles.schemas`); turn it off for a custom template with another format.
        `scoring`: see `ScoringRole`. `reask`: how many more times an unreadable answer is
        asked (the TAIScore authors ask twice in all); the re-asks are seeded, so a rerun
        asks and caches the same ones.
        """
        super().__init__(model, sampling, template, scoring=scoring)
        self.structured = structured
        self.reask = reask

    def call_tags(self, step: str | None = None) -> dict[str, str | None]:
        """A judge's calls are filed under its name, as its Judgments are (`judge:taiscore`)."""
        return {"role": f"judge:{self.name}", "step": step or self.call_step}

    def score(self, rollouts: Sequence[Rollout],
              samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """The `Scorer` call: one Judgment per rollout (judges of rollouts read y0, c, y1)."""
        return self.judge(rollouts)  # type: ignore[attr-defined]

    def _ask(self, fields: list[dict[str, Any]],
             answer_schemas: Sequence[dict[str, Any] | None] | None = None,
             attempt: int = 0) -> list[Completion]:
        """Render every item and ask for all of them; one completion per item, in order.
        Attempt k > 0 is a re-ask, seeded apart from the first answer."""
        prompts = [self.template.render(**f) for f in fields]
        seed = {"seed": (self.sampling.seed or 0) + attempt} if attempt else {}
        return self.ask(prompts, answer_schemas if self.schema_bound else None, self.scoring_sampling(**seed))

    @property
    def schema_bound(self) -> bool:
        """Whether answers are decoded under their schema: not for a custom template's format
        (`structured=False`) nor where the config asks for the papers' free answers
        (`sampling.output: free`; the parsers are lenient either way)."""
        return self.structured and getattr(self.sampling, "output", "schema") == "schema"

    def _judge_all(self, fields: list[dict[str, Any]],
                   answer_schemas: Sequence[dict[str, Any] | None] | None,
                   read: Callable[[int, Completion], Judgment]) -> list[Judgment]:
        """Ask for every item, read each answer with `read(index, completion)`, and ask the
        unreadable ones again (up to `reask` times) as the TAIScore authors' reward does.

        Greedy judges are not re-asked: the same prompt would get the same answer.
        """
        judgments = [read(i, c) for i, c in enumerate(self._ask(fields, answer_schemas))]
        for attempt in range(1, self.reask + 1 if self.sampling.temperature > 0 else 1):
            again = [i for i, j in enumerate(judgments) if not j.valid]
            if not again:
                break
            retry = self._ask([fields[i] for i in again],
                              None if answer_schemas is None else [answer_schemas[i] for i in again],
                              attempt)
            for i, completion in zip(again, retry):
                judgments[i] = read(i, completion)
                judgments[i].asked = attempt + 1
        return judgments

    def _judgment(self, raw: str, parsed: Parsed, score: float | None,
                  expected: float | None = None, **extra: Any) -> Judgment:
        """`score` is the value the judge wrote; `expected` its expectation, where known."""
        sampled = score if parsed.valid else None
        expected = expected if parsed.valid else None
        chosen = expected if self.scoring == "expected" and expected is not None else sampled
        return Judgment(
            judge=self.name,
            scores=parsed.scores,
            reasons=parsed.reasons,
            score=chosen,
            sampled=sampled,
            expected=expected,
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
    #: Longest reason the answer schema allows (None: no cap); `sampling.reason_limit` overrides it.
    reason_limit: ClassVar[int | None] = schemas.REASON_LIMIT
    #: A key the judge must also answer whose value IS the final score (TAIScore's
    #: "score"); without one the final score is the mean of the dimensions.
    final_key: ClassVar[str | None] = None

    def judge(self, rollouts: Sequence[Rollout]) -> list[Judgment]:
        """Score each rollout's (x, y0, c[, y1]), one Judgment per rollout, in order."""
        fields = [self._fields(r) for r in rollouts]
        limit = getattr(self.sampling, "reason_limit", None) or self.reason_limit
        answer = schemas.scored_dimensions(self.dimensions, self.final_key, reason_limit=limit)
        return self._judge_all(fields, [answer] * len(fields), lambda _i, c: self._read(c))

    def _fields(self, rollout: Rollout) -> dict[str, str]:
        return _rollout_fields(rollout, critique=True, revision="y1" in self.reads)

    def _read(self, completion: Completion) -> Judgment:
        raw = completion.text
        parsed = parse_scored_dimensions(raw, self.dimensions, aliases=self.aliases)
        offsets = keyed_value_offsets(raw)
        expected = [self._expected(completion, offsets, (d, "score"), (d,)) for d in self.dimensions]
        final = sum(parsed.scores.get(d, 0.0) for d in self.dimensions) / len(self.dimensions)
        mean_expected = None if None in expected else sum(expected) / len(expected)  # type: ignore[arg-type]
        return self._judgment(raw, parsed, final, mean_expected)

    def _expected(self, completion: Completion, offsets: dict[tuple, int],
                  *paths: tuple[str, ...]) -> float | None:
        """The expected 1–10 score at the first of `paths` the answer holds."""
        if self.scoring != "expected":
            return None
        at = next((offsets[p] for p in paths if p in offsets), None)
        return expected_value(completion, at, _ONE_TO_TEN)


_ONE_TO_TEN = integer_answers(1, 10)


class TaiScoreJudge(_DimensionJudge):
    """Table 14: four 1–10 diagnostics plus a final 1–10 `score`, which is the reward.

    As in the authors' reward code (`taiscore/reward/taiscore.py`): the final `score` alone
    decides, so an answer whose diagnostics are missing or unreadable still counts (they
    are stored where readable, the problem in `diagnostics_error`); the inputs are trimmed;
    the reasons are free text of any length.
    """

    name = "taiscore"
    reads = ("x", "y0", "c", "y1")
    is_reward = True
    python_kind = "reward"
    default_template = "judge_taiscore"
    dimensions = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    # The rubric calls the third dimension "Targeted Quality Gain"; models echo that name.
    aliases = {"targeted_quality_gain": "quality_gain", "final_score": "score"}
    final_key = "score"
    reason_limit = None

    def _fields(self, rollout: Rollout) -> dict[str, str]:
        return {k: v.strip() for k, v in super()._fields(rollout).items()}

    def _read(self, completion: Completion) -> Judgment:
        raw = completion.text
        # All keys are looked for, so the answer's top level wins over the dimension objects
        # nested in it (each has a "score" of its own); only the final one is required.
        parsed = parse_scored_dimensions(raw, (*self.dimensions, "score"), aliases=self.aliases)
        score = parsed.scores.pop("score", None)
        parsed.reasons.pop("score", None)
        problems, parsed.valid, parsed.error = parsed.error, score is not None, None
        if score is None:
            parsed.error = problems or "no final 'score'"
        expected = self._expected(completion, keyed_value_offsets(raw), ("score",), ("final_score",))
        extra = {"diagnostics_error": problems} if score is not None and problems else {}
        return self._judgment(raw, parsed, score, expected, **extra)


class CritiqueQualityJudge(_DimensionJudge):
    """Table 8: the critique alone, given (x, y0), on six 1–10 dimensions; score = mean."""

    name = "critique_quality"
    reads = ("x", "y0", "c")  # the critique alone: no revision is made for it
    is_reward = True
    python_kind = "reward"
    default_template = "judge_critique_quality"
    dimensions = (
        "specificity", "actionability", "priority", "faithfulness", "coverage",
        "constructiveness",
    )


class AdherenceJudge(_DimensionJudge):
    """Table 9: how well y1 implements c, on four 1–10 dimensions; score = mean."""

    name = "adherence"
    reads = ("x", "y0", "c", "y1")
    default_template = "judge_adherence"
    dimensions = (
        "main_issue_adherence", "completeness_of_adoption", "faithful_implementation",
        "non_superficial_revision",
    )


class OutcomeGainJudge(Judge):
    """Table 13: is y1 better than y0 for x? 1 / 0.5 / 0, without seeing the critique."""

    name = "outcome_gain"
    reads = ("x", "y0", "y1")  # critique-blind
    is_reward = True
    python_kind = "reward"
    default_template = "judge_outcome_gain"
    ANSWERS: ClassVar[dict[float, float]] = {1.0: 1.0, 0.5: 0.5, 0.0: 0.0}

    def judge(self, rollouts: Sequence[Rollout]) -> list[Judgment]:
        """One judgment per rollout; `scores["gain"]` and `score` are 1, 0.5 or 0."""
        fields = [_rollout_fields(r, critique=False, revision=True) for r in rollouts]

        def read(_i: int, completion: Completion) -> Judgment:
            value, error = parse_single_answer(completion.text, self.ANSWERS)
            parsed = Parsed.invalid(error) if error else Parsed(scores={"gain": value})
            expected = None
            if self.scoring == "expected":
                expected = expected_value(completion, bare_answer_offset(completion.text), _GAIN)
            return self._judgment(completion.text, parsed, value, expected)

        return self._judge_all(fields, [schemas.choice([1, 0.5, 0])] * len(fields), read)


_GAIN = {"1": 1.0, "0.5": 0.5, "0": 0.0}


#: The pairwise answers as written: the schema's enum writes the tie as a JSON string.
_PAIRWISE = {"1": 1.0, "2": 2.0, '"tie"': 0.5, "tie": 0.5}


def order_swapped(item_id: str, seed: int = 0) -> bool:
    """Whether the pairwise judge shows the second response first for this item.

    Derived from a hash of (seed, id), not from Python's salted `hash`, so the order is the
    same on every run and does not depend on which other items share the batch.
    """
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random() < 0.5


def shown_swapped(prompts: Sequence[str], ids: Sequence[str] | None, seed: int,
                  rng: random.Random | None, swapped: Sequence[bool] | None) -> list[bool]:
    """Per item, whether a pairwise judge shows the second response first: `swapped` as
    given, else one `rng` draw per item, else `order_swapped(id, seed)`."""
    if swapped is not None:
        if len(swapped) != len(prompts):
            raise ValueError(f"swapped has {len(swapped)} entries for {len(prompts)} items")
        return [bool(s) for s in swapped]
    keys = list(ids) if ids is not None else list(prompts)
    return [rng.random() < 0.5 if rng is not None else order_swapped(str(key), seed) for key in keys]


class PairwiseJudge(Judge):
    """D.3: critique-blind preference between two responses shown in random order.

    The answer is mapped back to the ORIGINAL order: `scores["preference"]` is 1.0 when
    the second original response wins (y1 in `judge_rollouts`), 0.0 when the first wins,
    0.5 for a tie. Extra fields `shown_order` (labels in the order shown) and `winner`.
    With `scoring=expected` the score is P(second wins) + P(tie)/2 from the answer token's
    probabilities and `winner` the most probable outcome.
    """

    name = "pairwise"
    reads = ("x", "y0", "y1")  # critique-blind
    python_kind = "pairwise"
    default_template = "judge_pairwise"
    ANSWERS: ClassVar[dict[Any, str]] = {1.0: "1", 2.0: "2", "tie": "tie"}

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None,
                 *, order_seed: int = 0, **options: Any):
        """`order_seed`: the seed of `score`'s shown order (see `order_swapped`)."""
        super().__init__(model, sampling, template, **options)
        self.order_seed = order_seed

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
        swapped: Sequence[bool] | None = None,
    ) -> list[Judgment]:
        """Compare `first[i]` with `second[i]` for `prompts[i]`.

        The shown order comes from `swapped` when given (True: `second[i]` shown first;
        how `coevo.eval.both_orders` asks for both orders), else from `rng` (one draw per
        item, in order), else from `order_swapped(ids[i], seed)`; without `ids` the prompt
        text stands in.
        """
        if not len(prompts) == len(first) == len(second):
            raise ValueError("prompts, first and second must have the same length")
        swapped = shown_swapped(prompts, ids, seed, rng, swapped)
        fields = [
            {"prompt": x, "response_1": b if swap else a, "response_2": a if swap else b}
            for x, a, b, swap in zip(prompts, first, second, swapped)
        ]
        labels_shown = [[labels[1], labels[0]] if swap else [labels[0], labels[1]] for swap in swapped]

        def read(i: int, completion: Completion) -> Judgment:
            raw, shown = completion.text, labels_shown[i]
            answer, error = parse_single_answer(raw, self.ANSWERS, words=("tie",))
            reasons = {"shown_order": ", ".join(shown)}
            if error:
                return self._judgment(raw, Parsed.invalid(error, reasons=reasons), None,
                                      shown_order=shown, winner=None)
            reasons["answer"] = answer
            winner = "tie" if answer == "tie" else shown[int(answer) - 1]
            preference = 0.5 if winner == "tie" else float(winner == labels[1])
            expected, dist = None, None
            if self.scoring == "expected":
                dist = answer_distribution(completion, bare_answer_offset(raw), _PAIRWISE)
            if dist:
                # P(A) vs P(B): the preference is P(second original wins) + P(tie)/2, and the
                # winner the most probable of first / second / tie.
                total = sum(dist.values())
                p_shown = {shown[0]: dist.get("1", 0.0) / total, shown[1]: dist.get("2", 0.0) / total,
                           "tie": (dist.get('"tie"', 0.0) + dist.get("tie", 0.0)) / total}
                expected = p_shown[labels[1]] + 0.5 * p_shown["tie"]
                winner = max(p_shown, key=p_shown.__getitem__)
                reasons["probabilities"] = ", ".join(f"{k} {v:.2f}" for k, v in p_shown.items())
            parsed = Parsed(scores={"preference": preference}, reasons=reasons)
            return self._judgment(raw, parsed, preference, expected, shown_order=shown, winner=winner)

        return self._judge_all(fields, [schemas.choice([1, 2, "tie"])] * len(fields), read)

    def score(self, rollouts: Sequence[Rollout],
              samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """The `Scorer` call: is each rollout's y1 preferred over its y0?"""
        return self.judge_rollouts(rollouts, seed=self.order_seed)

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
    reads = ("x", "y0", "rubric")  # the final response: y1 where there is one, else y0
    python_kind = "gold"
    default_template = "judge_gold_rubric"
    _NAME_KEYS = ("name", "criterion", "title")

    def score(self, rollouts: Sequence[Rollout],
              samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """The `Scorer` call: each rollout's final response (y1, else y0) against the gold
        rubric of its sample in `samples`."""
        missing = [r.sample_id for r in rollouts if r.sample_id not in (samples or {})]
        if missing:
            raise ValueError(f"the gold-rubric judge needs the samples of the rollouts it scores; "
                             f"none given for ids {missing[:5]}")
        return self.judge([samples[r.sample_id] for r in rollouts],  # type: ignore[index]
                          [r.y1 or r.y0 for r in rollouts])

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
        answers = [schemas.criteria_scores([c.name for c in s.rubric.criteria]) for s in samples]

        def read(i: int, completion: Completion) -> Judgment:
            sample, raw = samples[i], completion.text
            parsed = self._parse(raw, sample)
            if not parsed.valid:
                return self._judgment(raw, parsed, None)
            criteria = sample.rubric.criteria  # type: ignore[union-attr]
            total = sum(c.weight for c in criteria)
            score = sum(c.weight * parsed.scores[c.name] for c in criteria) / total
            expected = None
            if self.scoring == "expected":
                # The schema writes the criteria in rubric order: entry k scores criterion k.
                offsets = keyed_value_offsets(raw)
                each = [expected_value(completion, offsets.get(("criteria", k, "score")), _ONE_TO_TEN)
                        for k in range(len(criteria))]
                if None not in each:
                    expected = sum(c.weight * e for c, e in zip(criteria, each)) / total  # type: ignore[operator]
            return self._judgment(raw, parsed, score, expected)

        return self._judge_all(fields, answers, read)

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
    reads = ("x",)
    judges_rollouts = False
    default_template = "query_filter"
    expectable = False
    #: Fields a template may show, "not available" where the sample has none (`intent`: the
    #: OpenScholar grader's, coevo/prompts/openscholar_query_filter.md).
    _OPTIONAL_FIELDS = ("ability", "domain", "category", "language_hint", "intent")

    def score(self, rollouts: Sequence[Rollout],
              samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """The `Scorer` call: grade each rollout's query (its sample where given, else x)."""
        samples = samples or {}
        return self.judge([samples.get(r.sample_id) or Sample(id=r.sample_id, prompt=r.x) for r in rollouts])

    def judge(self, samples: Sequence[Sample]) -> list[Judgment]:
        """One query per call; extra field `decision`; a model decision that contradicts
        its own score is overridden by the score rule (noted in `reasons["decision"]`)."""
        fields = [self._fields(s) for s in samples]

        def read(i: int, completion: Completion) -> Judgment:
            raw = completion.text
            parsed, model_decision = self._parse(raw, samples[i].id)
            score = parsed.scores.get("quality") if parsed.valid else None
            decision = None if score is None else ("GRADE" if score >= 3 else "SKIP")
            if decision and model_decision and model_decision != decision:
                parsed.reasons["decision"] = (
                    f"model said {model_decision}; score {score:g} means {decision}"
                )
            return self._judgment(raw, parsed, score, decision=decision)

        return self._judge_all(fields, [schemas.query_grade()] * len(samples), read)

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

# The judge tables, derived from what each judge declares (written once, above).
#: Judge names as configs and the CLI spell them (`reward: outcome_gain`, `judges: [...]`).
JUDGE_NAMES: tuple[str, ...] = tuple(name for name, judge in JUDGES.items() if judge.judges_rollouts)
#: Judges whose score serves as a GRPO reward.
REWARD_JUDGES: tuple[str, ...] = tuple(name for name in JUDGE_NAMES if JUDGES[name].is_reward)
#: Judge name -> what a Python function standing for it is called with.
KIND_OF_JUDGE: dict[str, str] = {name: JUDGES[name].python_kind for name in JUDGE_NAMES  # type: ignore[misc]
                                 if JUDGES[name].python_kind}


def judge_reads(name: str, field: str) -> bool:
    """Whether judge `name` reads rollout field `field` (x, y0, c, y1, rubric)."""
    return field in JUDGES[name].reads


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
