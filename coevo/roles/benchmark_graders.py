"""The transfer benchmarks' own grading (DecoEvo's EQ-Bench Creative Writing v3 and LLMEval-Med),
for data without gold rubrics (tasks/transfer_benchmarks.py). The prompts are ours, written from
each benchmark's scripts (read, not copied); a Judgment's `score` is on 0-1 (`UNIT_SCORED`).

- **EQ-Bench CW v3** (EQ-bench/creative-writing-bench, core/scoring.py): the piece rated 0-20 on
  its 22 criteria, 9 of them faults (`NEGATIVE`, scored 20 - x), the criteria that were rated
  averaged; the benchmark reports that mean x 5 as its "Rubric Score (0-100)", here / 20 (0-1).
  Its parser reads any "name: N" line of the whole reply; this one reads the 22 criteria's
  lines only. The benchmark's judge sees the prompt with its `<SEED>` placeholder left in; this
  one sees the prompt the writer answered.
- **LLMEval-Med** (llmeval/LLMEval-Med, evaluate/Evaluate.py, Aggregate.py): against the expert
  reference answer (and the checklist, where the item has one), one score 1-5; an answer is
  usable at 4 or above, and the benchmark reports the share usable ("Usability Rate"), so the
  0-1 score is 1 for a usable answer and 0 otherwise (the 1-5 grade in `scores["grade"]`). Its
  category prompts are in Chinese; this one is a single English prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from coevo.roles.decoevo import UNIT_SCORED
from coevo.roles.judges import Judge
from coevo.core.types import Completion, Judgment, Sample

CRITERIA = (
    "Adherence to Instructions", "Believable Character Actions", "Nuanced Characters",
    "Consistent Voice/Tone of Writing", "Imagery and Descriptive Quality", "Elegant Prose", "Emotionally Engaging",
    "Emotionally Complex", "Coherent", "Meandering", "Weak Dialogue", "Tell-Don't-Show", "Unsurprising or Uncreative",
    "Amateurish", "Purple Prose", "Overwrought", "Incongruent Ending Positivity", "Unearned Transformations",
    "Well-earned Lightness or Darkness", "Sentences Flow Naturally", "Overall Reader Engagement", "Overall Impression",
)
NEGATIVE = frozenset({"Unearned Transformations", "Incongruent Ending Positivity", "Overwrought", "Purple Prose",
                      "Amateurish", "Unsurprising or Uncreative", "Tell-Don't-Show", "Weak Dialogue", "Meandering"})
#: LLMEval-Med's usable answer: a grade of at least this (Aggregate.py).
USABLE = 4


class _TransferGrader(Judge):
    reads = ("x", "y0")
    judges_rollouts = False
    expectable = False


class EqBenchCreativeGrader(_TransferGrader):
    """EQ-Bench CW v3's rubric: 22 criteria rated 0-20, faults inverted, the mean / 20."""

    name = "eqbench_cw"
    default_template = "eqbench_cw_grader"

    def judge(self, samples: Sequence[Sample], responses: Sequence[str]) -> list[Judgment]:
        fields = [{"prompt": s.prompt, "response": y, "criteria": "\n".join(f"- {c}" for c in CRITERIA),
                   "negative_criteria": ", ".join(c for c in CRITERIA if c in NEGATIVE)}
                  for s, y in zip(samples, responses)]
        return self._judge_all(fields, None, lambda _i, c: self._read(c))

    def _read(self, completion: Completion) -> Judgment:
        rated = criterion_scores(completion.text)
        if not rated:
            return Judgment(judge=self.name, raw=completion.text, valid=False, template=self.template.hash,
                            error="no 'Criterion: score' line (0-20) for any of the 22 criteria")
        oriented = {c: 20.0 - v if c in NEGATIVE else v for c, v in rated.items()}
        score = sum(oriented.values()) / len(oriented) / 20.0
        return Judgment(judge=self.name, scores=rated, score=score, sampled=score, raw=completion.text,
                        template=self.template.hash, source=UNIT_SCORED)


def criterion_scores(text: str) -> dict[str, float]:
    """The criteria's 0-20 ratings in a reply ("Name: 14" or "Name: [14]"), read after its
    [Scores] heading where it has one; a value above 20 is dropped, as the benchmark drops it."""
    scores_at = text.find("[Scores]")
    section = text[scores_at:] if scores_at >= 0 else text
    found: dict[str, float] = {}
    for name in CRITERIA:
        match = re.search(rf"^\W*{re.escape(name)}\W*:\s*\[?\s*(\d+(?:\.\d+)?)", section, re.IGNORECASE | re.MULTILINE)
        if match and float(match.group(1)) <= 20:
            found[name] = float(match.group(1))
    return found


class LlmEvalMedGrader(_TransferGrader):
    """LLMEval-Med's grade: 1-5 against the reference answer; usable (1) at 4 or above, else 0."""

    name = "llmeval_med"
    default_template = "llmeval_med_grader"

    def judge(self, samples: Sequence[Sample], responses: Sequence[str]) -> list[Judgment]:
        fields = [_med_fields(s, y) for s, y in zip(samples, responses)]
        return self._judge_all(fields, None, lambda _i, c: self._read(c))

    def _read(self, completion: Completion) -> Judgment:
        match = re.search(r"\[\s*([1-5])\s*\]", completion.text)  # the first bracketed grade, as Evaluate.py
        if match is None:
            return Judgment(judge=self.name, raw=completion.text, valid=False, template=self.template.hash,
                            error="no grade [1-5] in the answer")
        grade = int(match.group(1))
        usable = 1.0 if grade >= USABLE else 0.0
        return Judgment(judge=self.name, scores={"grade": float(grade)}, score=usable, sampled=usable,
                        raw=completion.text, template=self.template.hash, source=UNIT_SCORED)


def _med_fields(sample: Sample, response: str) -> dict[str, Any]:
    checklist = sample.meta.get("checklist")
    return {"question": sample.prompt, "response": response, "reference": sample.meta.get("reference", ""),
            "checklist_note": " and its checklist of core and secondary requirements" if checklist else "",
            "checklist_block": f"\nChecklist:\n{checklist}" if checklist else ""}


#: `meta["benchmark"]` -> the grader that benchmark uses.
GRADERS = {"eqbench_cw": EqBenchCreativeGrader, "llmeval_med": LlmEvalMedGrader}


def own_grader(samples: Sequence[Sample]) -> type[Judge] | None:
    """The benchmark's own grader when every sample is one benchmark's that grades without gold
    rubrics; None otherwise (mixed, or another benchmark)."""
    names = {s.meta.get("benchmark") for s in samples}
    return GRADERS.get(names.pop()) if len(names) == 1 else None


__all__ = ["CRITERIA", "GRADERS", "NEGATIVE", "EqBenchCreativeGrader", "LlmEvalMedGrader", "criterion_scores",
           "own_grader"]
