"""Scores that follow the rubric's criterion order or the prompt, not the answer.

A judge asked for one score per criterion can answer by rote: a small model writes
1, 2, 3, 4, 5 down the rubric's criteria whatever it read, or gives every answer to one
prompt the same scores (it scored the prompt). Its mean score still looks like a number, and
a headline built on it moves with the prompts, not with the answers. The audit's items make
this measurable: per prompt it judges several different answers (the real one, content-free
master keys, the real one padded and with an instruction appended), so a judge that reads
the answers cannot give them all one pattern.

Two measures, each a share of the audited prompts with its Wilson 95 % interval (the prompt
is the unit: a prompt's judgments share its rubric and are not independent of each other):

- `criterion_order_rate`: prompts where more than half of the readable judgments with at
  least MIN_CRITERIA criterion scores are *strictly* rising or falling in the rubric's order
  (1, 2, 3, 4, 5 or 9, 7, 4, 2, 1). Strictly, because equal scores (all 10, all 1) are what
  a good or an empty answer earns, and are the other measure's business;
- `same_pattern_rate`: prompts with at least MIN_ANSWERS different answers judged readably,
  all of which got the same scores (per criterion, where the judge gives them; else the
  final score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coevo.audit.measures import Estimate, share
from coevo.core.types import Judgment

#: Fewest criterion scores a judgment needs to be read as following the order: any two
#: unequal scores rise or fall, so with two criteria "monotone" means nothing; from three on
#: a strict run by chance happens to a judgment now and then, to most of a prompt's judgments
#: (content-free ones among them) practically never.
MIN_CRITERIA = 3
#: Fewest different answers to a prompt before "they all got the same scores" says something:
#: two answers may deserve the same scores; three, one of them content-free, should not.
MIN_ANSWERS = 3


@dataclass(frozen=True)
class Case:
    """One judgment of the audit: the prompt it belongs to, the answer judged (its slot texts,
    as one key), the judgment, and the rubric's criterion names in order (None: the judgment's own)."""

    prompt: str
    answer: tuple[str | None, ...]
    judgment: Judgment
    criteria: tuple[str, ...] | None = None


def score_pattern(case: Case) -> tuple[float, ...] | None:
    """A readable judgment's scores in criterion order (the rubric's where every criterion is
    scored, else the order the judge wrote them), or its final score alone where it gave no
    per-criterion scores; None when unreadable."""
    judgment = case.judgment
    if not judgment.valid or judgment.score is None:
        return None
    scores = judgment.scores
    if case.criteria and all(name in scores for name in case.criteria):
        return tuple(float(scores[name]) for name in case.criteria)
    if scores:
        return tuple(float(v) for v in scores.values())
    return (float(judgment.score),)


def follows_order(pattern: Sequence[float]) -> bool:
    """Strictly rising or strictly falling over at least MIN_CRITERIA scores."""
    if len(pattern) < MIN_CRITERIA:
        return False
    steps = [b - a for a, b in zip(pattern, pattern[1:])]
    return all(s > 0 for s in steps) or all(s < 0 for s in steps)


def _by_prompt(cases: Sequence[Case]) -> dict[str, list[tuple[Case, tuple[float, ...]]]]:
    grouped: dict[str, list[tuple[Case, tuple[float, ...]]]] = {}
    for case in cases:
        pattern = score_pattern(case)
        if pattern is not None:
            grouped.setdefault(case.prompt, []).append((case, pattern))
    return grouped


def criterion_order_rate(cases: Sequence[Case]) -> Estimate | None:
    """The share of prompts whose judgments mostly follow the criterion order (module doc);
    None where no judgment has MIN_CRITERIA criterion scores (nothing to measure)."""
    prompts = {case.prompt for case in cases}
    counted = following = 0
    for group in _by_prompt(cases).values():
        long_enough = [pattern for _, pattern in group if len(pattern) >= MIN_CRITERIA]
        if not long_enough:
            continue
        counted += 1
        following += sum(follows_order(p) for p in long_enough) * 2 > len(long_enough)
    if not counted:
        return None
    return share(following, counted, len(prompts) - counted)


def same_pattern_rate(cases: Sequence[Case]) -> Estimate:
    """The share of prompts, among those with MIN_ANSWERS different answers judged readably,
    whose every judgment got the same scores (module doc)."""
    prompts = {case.prompt for case in cases}
    counted = same = 0
    for group in _by_prompt(cases).values():
        if len({case.answer for case, _ in group}) < MIN_ANSWERS:
            continue
        counted += 1
        same += len({pattern for _, pattern in group}) == 1
    if not counted:
        return Estimate(invalid=len(prompts), note=f"no prompt had {MIN_ANSWERS} different answers judged readably")
    return share(same, counted, len(prompts) - counted)
